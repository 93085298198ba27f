"""A request's image the tokenizer manager failed to preprocess, the server serving on (round 79).

SGLang's tokenizer manager preprocesses each request's image (load, pad to a square with the image
processor's mean colour, the processor's pixel values) in a function run per request, in its process pool
where the model is multimodal: 0.1.x's and 0.2.x's ``get_pixel_values`` (0.1.9
``managers/tokenizer_manager.py:53-74``, 0.2.12 ``:627-657``), later ``_process_single_image_task`` (0.3.2
``managers/tokenizer_manager.py:747-789``, 0.3.6 ``managers/image_processor.py:65-109``, 0.4.10.post2
``multimodal/processors/llava.py:37-82``). Its body is one ``try`` whose ``except Exception`` prints (from 0.3.0
logs at error) "Exception in TokenizerManager:" and the traceback and returns None, raising nothing: the
request that sent the image fails in its own handler (0.1.9 ``generate_request`` unpacks the None,
``tokenizer_manager.py:155``; the HTTP route answers that request with an error, ``server.py:80-92``), and the
server goes on serving the rest. So a traceback under that header through that function is one request's
error: ``request_error`` at serving, no crash (a grayscale image that the 3-value padding colour does not fit
is the common one: PIL's "color must be int or single-element tuple", 0.1.9 ``mm_utils.py:167``).

The traceback starts in that function (the ``try`` is its whole body), so its frame is what the rule reads;
the header is on a line of its own before "Traceback", which the traceback's reading does not keep. The same
name in the processors that do not catch (0.4.4.post3 ``managers/multimodal_processors/clip.py:19``, mllama's)
raises into the request's own preprocessing, awaited by that request: one request's error all the same. Not
this: the name in a file outside SGLang's managers and processors (another project's helper).
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES", "IMAGE_PREPROCESS_FAILED"]

# the function whose try printed it (the traceback starts in it), in the tokenizer manager, the image processor
# module or a multimodal processor (managers/image_processors/, managers/multimodal_processors/,
# multimodal/processors/)
_IMAGE_TASK_FRAME = (r"(?:(?:managers|processors)[/\\]\w+|tokenizer_manager|image_processor)\.py\", line \d+, "
                     r"in (?:get_pixel_values|_process_single_image_task)\s*$")

IMAGE_PREPROCESS_FAILED = Signature(
    "image_preprocess_failed", "request_error", "the tokenizer manager failed to preprocess one request's image",
    ("SGLang's tokenizer manager failed to preprocess the image of one request (loading it, padding it to a "
     "square, the image processor) and logged it as 'Exception in TokenizerManager'; that request failed and "
     "the server kept serving the others. The image is the suspect: a grayscale or palette image (mode 'L', "
     "'P') that the padding's three-value colour does not fit ('color must be int or single-element tuple') "
     "is converted to RGB by the client or by a later release; an image that does not load (a URL, a base64 "
     "string) is sent again as a file or a data URL.",),
    patterns=(r".",), context=(_IMAGE_TASK_FRAME,), priority=11, phase="serving", request=True,
    cut_ok=True,
    sources=(("sglang 0.1.9", "sglang/srt/managers/tokenizer_manager.py:74 (get_pixel_values' except: print "
                              "\"Exception in TokenizerManager:\\n\" + traceback; the try at :56, expand2square "
                              ":61)"),
             ("sglang 0.1.9", "sglang/srt/managers/tokenizer_manager.py:155 (generate_request unpacks what "
                              "get_pixel_values returned)"),
             ("sglang 0.1.9", "sglang/srt/mm_utils.py:167 (expand2square: Image.new(pil_img.mode, ..., "
                              "background_color))"),
             ("sglang 0.2.12", "sglang/srt/managers/tokenizer_manager.py:657"),
             ("sglang 0.3.2", "sglang/srt/managers/tokenizer_manager.py:789 (_process_single_image_task: "
                              "logger.error)"),
             ("sglang 0.3.6", "sglang/srt/managers/image_processor.py:109"),
             ("0.4.10.post2", "sglang/srt/multimodal/processors/llava.py:82")))

SIGNATURES = [IMAGE_PREPROCESS_FAILED]
