"""The Hugging Face hub unreachable through TLS or a proxy while vLLM resolves the model (``model_not_found``,
vLLM round 91).

vLLM reads the model's config through transformers' ``cached_file``, which asks huggingface_hub's
``hf_hub_download`` for the file; a connection error or timeout there falls back to the local cache (and, when
that holds nothing, an error ddlab's ``model_not_found`` already reads: "couldn't connect to
'https://huggingface.co'", ``LocalEntryNotFoundError``), but an ``SSLError`` or ``ProxyError`` is raised as it is
(huggingface_hub 0.26.2 file_download.py:1428-1430, "Actually raise for those subclasses of ConnectionError"):
requests' text names the pool, "HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded with
url: /<repo>/resolve/<revision>/<file>". The model could not be reached, as the other texts of that kind say.

(round 94) A huggingface_hub release that cannot parse the Hub's answer (``dependency_mismatch``): its ``ModelInfo``
hands the answer's "safetensors" entry whole to a dataclass (``SafeTensorsInfo(**safetensors)``, the log's
hf_api.py:710), which refuses a key the Hub added later ("sharded"); releases since build it from the two keys they
know (huggingface_hub 0.26.2 hf_api.py:864-869). vLLM 0.4.0 asks for the repo's files that way while loading weights.

(round 99) The hub refusing a resumed download with 416 (``model_not_found``): huggingface_hub resumes a file from its
partial ``.incomplete`` blob, asking for ``Range: bytes=<size of the partial file>-`` (0.23.4 file_download.py:1873,
:456-457; 0.26.2 :1534, :365-366), and raises the refusal as it is (``HfHubHTTPError(str(e))``, 0.23.4
utils/_errors.py:370; requests' "416 Client Error: Requested Range Not Satisfiable for url: ..."): the partial file
is as long as the file or longer (a download cut, or another process's), and every retry asks the same. vLLM
downloads the weight files in its loader (model_loader/loader.py:200 ``download_weights_from_hf``, weight_utils.py:227
``snapshot_download`` (0.5.3.post1)): the files cannot be had until the partial blob goes.
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES", "HUB_UNREACHABLE", "HUB_INFO_UNPARSED", "HUB_RANGE_REFUSED"]

# requests' / urllib3's text for the hub's host, any of its exception classes (SSLError, ProxyError, MaxRetryError,
# ConnectionError) carries it; another host (a mirror of the user's, an API) is not read
_HUB_POOL = r"HTTPSConnectionPool\(host='huggingface\.co', port=\d+\): Max retries exceeded with url: /\S+/resolve/"
HUB_UNREACHABLE = Signature(
    "vllm_hub_unreachable", "model_not_found", "huggingface.co could not be reached to fetch the model's files",
    ("vLLM asked huggingface.co for the model's files (its config first) and the connection failed (TLS, a proxy "
     "or the network: the exception's last part says which), with nothing in the local Hugging Face cache to fall "
     "back on. Download the repo where the hub is reachable (`huggingface-cli download REPO --local-dir DIR`) and "
     "give vLLM that folder as the model, or fix the host's proxy / CA settings (HTTPS_PROXY, REQUESTS_CA_BUNDLE) "
     "or point HF_ENDPOINT at a mirror; once the files are cached, HF_HUB_OFFLINE=1 keeps vLLM off the network.",),
    types=r"(?:\w+\.)*(?:SSLError|ProxyError|MaxRetryError|ConnectionError)", patterns=(_HUB_POOL,),
    priority=84, phase="launch",
    sources=(("huggingface_hub 0.26.2", "huggingface_hub/file_download.py:1428"),
             ("huggingface_hub 0.26.2", "huggingface_hub/file_download.py:1432")))

# a dataclass of hf_api.py refusing a key of the Hub's answer; read only below an hf_api.py frame (another
# library's dataclass refusing a keyword is not this)
_INFO_KEY = r"\b(?:SafeTensors|Transformers|Model|Dataset|Space|BlobLfs)Info\.__init__\(\) got an unexpected keyword"
HUB_INFO_UNPARSED = Signature(
    "vllm_hub_info_unparsed", "dependency_mismatch", "the installed huggingface_hub cannot parse the Hub's answer",
    ("huggingface_hub's hf_api could not build its info object from what huggingface.co answered: the Hub's API "
     "added a field this huggingface_hub release does not take. Upgrade it (`pip install -U huggingface_hub`, "
     "within the range transformers and vLLM accept: `pip check`), or give vLLM a local copy of the model "
     "(`huggingface-cli download REPO --local-dir DIR`) so it does not ask the Hub.",),
    types=r"TypeError", patterns=(_INFO_KEY,), context=(r'huggingface_hub[/\\]hf_api\.py", line \d+, in \w+',),
    priority=84,
    sources=(("huggingface_hub 0.26.2", "huggingface_hub/hf_api.py:864"),
             ("huggingface_hub 0.26.2", "huggingface_hub/hf_api.py:361")))

# requests' text for a 416 (another status, a 404's "Entry Not Found", is another text); the hub's class or requests'
_RANGE_REFUSED = r"\b416 Client Error: Requested Range Not Satisfiable for url: "
HUB_RANGE_REFUSED = Signature(
    "vllm_hub_range_refused", "model_not_found", "the hub refused to resume a partial download of the model's files",
    ("huggingface_hub tried to resume a file from the partial download in the Hugging Face cache and the hub "
     "answered 416 (Requested Range Not Satisfiable): the partial `.incomplete` file is already as long as the file "
     "or longer (an earlier download cut short, or another process downloading the same repo), and every retry "
     "asks for the same range. Stop every process using that cache, delete the repo's partial files "
     "(`find ~/.cache/huggingface/hub/models--ORG--NAME/blobs -name '*.incomplete' -delete`, or under HF_HOME / "
     "the download dir given), then download once before starting (`huggingface-cli download REPO`) and start "
     "vLLM with HF_HUB_OFFLINE=1 or the local folder as the model.",),
    types=r"(?:\w+\.)*(?:HfHubHTTPError|HTTPError)", patterns=(_RANGE_REFUSED,), priority=84, phase="load_weights",
    sources=(("huggingface_hub 0.23.4", "huggingface_hub/file_download.py:456-457 (headers[\"Range\"] = "
                                        "\"bytes=%d-\" % (resume_size,))"),
             ("huggingface_hub 0.23.4", "huggingface_hub/file_download.py:1873 (resume_size = f.tell())"),
             ("huggingface_hub 0.23.4", "huggingface_hub/utils/_errors.py:370 (raise HfHubHTTPError(str(e), "
                                        "response=response))"),
             ("huggingface_hub 0.26.2", "huggingface_hub/file_download.py:365-366"),
             ("vllm 0.5.3.post1", "vllm/model_executor/model_loader/weight_utils.py:227 (snapshot_download)")))

SIGNATURES: list[Signature] = [HUB_UNREACHABLE, HUB_INFO_UNPARSED, HUB_RANGE_REFUSED]
