"""vLLM: a parallel layout the model or the node cannot take (``bad_argument``), read from the asserts that say so
(round 85): the tensor-parallel split's bare divisibility assert, and the V1 worker's check of the ranks a node runs
against the GPUs it sees, and the Ray executor finding no GPU worker on the driver's node; (round 90) a worker's
init_device finding no GPU visible to its process; (round 100) an attention layer's bare assert that its heads divide
over the tensor-parallel ranks; (round 105) ``--numa-bind`` on a node whose GPU-to-NUMA map vLLM cannot detect;
(round 110) a V1 multiproc worker whose rank's GPU index is past the GPUs its process sees.

Each is a text of vLLM's own source, cited ``(release, "vllm/path.py:line")`` as in :mod:`.loading`.
"""

from __future__ import annotations

from ddlab.crashes.signature import NO_LATER_FRAME, Signature

__all__ = ["SIGNATURES", "SIZE_NOT_DIVISIBLE", "HEADS_NOT_DIVISIBLE", "LOCAL_WORLD_OVER_DEVICES", "DRIVER_NO_GPU",
           "WORKER_NO_VISIBLE_GPU", "NUMA_NODES_UNDETECTED", "MP_RANK_PAST_DEVICES"]

# (round 85) distributed/utils.py's ensure_divisibility: ``assert numerator % denominator == 0, "{} is not divisible
# by {}".format(numerator, denominator)`` (0.5.1 vllm/distributed/utils.py:12; SGLang's copy, 0.4.0
# sglang/srt/distributed/utils.py:22), which divide() runs for each layer that splits a size of the model (vocab,
# heads, intermediate size) over the tensor-parallel ranks (linear.py, vocab_parallel_embedding.py, activation.py):
# the only writer of two bare integers; the quantization kernels' checks name their fields
# ("Weight output_size_per_partition = N is not divisible by ...", marlin.py:145 (0.5.1))
_NOT_DIVISIBLE = r"(?:^\s*|: )\d+ is not divisible by \d+[ \t]*(?:\r?\n|$)"
SIZE_NOT_DIVISIBLE = Signature(
    "vllm_tp_size_not_divisible", "bad_argument", "a size of the model does not divide over the tensor-parallel ranks",
    ("vLLM splits the model's vocabulary, heads and hidden sizes evenly over the tensor-parallel ranks, and one of "
     "them (the first number) is not a multiple of the tensor-parallel size (the second): pick a "
     "`--tensor-parallel-size` that divides the model's heads and vocabulary (a power of two usually does), and use "
     "the other GPUs for pipeline or data parallelism.",),
    types=r"(?:\w+\.)*AssertionError", patterns=(_NOT_DIVISIBLE,),
    lines=(r"^\s*(?:\w+\.)*AssertionError: \d+ is not divisible by \d+[ \t]*$",), priority=80,
    sources=(("vllm 0.5.1", "vllm/distributed/utils.py:12"),))

# (round 100) each model's attention layer splits its query and KV heads over the tensor-parallel ranks with bare
# asserts, no message: ``assert self.total_num_heads % tp_size == 0``, then ``assert self.total_num_kv_heads % tp_size
# == 0`` where the KV heads are as many as the ranks or more, else ``assert tp_size % self.total_num_kv_heads == 0``
# (0.5.0 vllm/model_executor/models/llama.py:103, :109, :113; the same three lines in qwen2.py, mistral's llama.py,
# and most models since): the traceback's last frame shows the assert's code line, the exception line
# "AssertionError" alone. Phi-3-medium (40 heads, 10 KV heads) under TP 4 fails the second. Another assert of those
# fields (a model's own check with a message) or one raised in a later frame is not this
_HEADS_ASSERT = (r"^[ \t]*assert (?:self\.)?(?:total_num_(?:kv_)?heads|num_(?:kv_)?heads) % tp_size == 0[ \t]*\n"
                 r"|^[ \t]*assert tp_size % (?:self\.)?(?:total_num_kv_heads|num_kv_heads) == 0[ \t]*\n")
HEADS_NOT_DIVISIBLE = Signature(
    "vllm_tp_heads_not_divisible", "bad_argument", "the model's attention heads do not divide over the tensor-parallel "
    "ranks",
    ("The model's attention layer splits its query and key/value heads evenly over the tensor-parallel ranks, and "
     "the head count its assert names (`num_attention_heads`, `num_key_value_heads` in the model's config.json) is "
     "not a multiple of `--tensor-parallel-size` (nor, for fewer KV heads than ranks, the size a multiple of them): "
     "pick a tensor-parallel size that divides both head counts (for 40 heads and 10 KV heads: 1, 2, 5 or 10; 2 on "
     "four GPUs), and use the other GPUs for pipeline parallelism (`--pipeline-parallel-size`) or another replica.",),
    types=r"(?:\w+\.)*AssertionError", patterns=(r"^",), context=("(?:" + _HEADS_ASSERT + ")" + NO_LATER_FRAME,),
    priority=80, phase="load_weights",
    sources=(("vllm 0.5.0", "vllm/model_executor/models/llama.py:103"),
             ("vllm 0.5.0", "vllm/model_executor/models/llama.py:109"),
             ("vllm 0.5.0", "vllm/model_executor/models/llama.py:113")))

# (round 85) the V1 GPU worker's init_device asserts that the ranks this node runs fit the GPUs it sees:
# f"local_world_size ({...}) must be less than or equal to the number of visible devices ({...})."
# (0.11.1 vllm/v1/worker/gpu_worker.py:210-214, 0.13.0 :210, 0.15.1 :204, 0.21.0 :268)
_LOCAL_WORLD = (r"local_world_size \(\d+\) must be less than or equal to the number of visible devices "
                r"\(\d+\)")
LOCAL_WORLD_OVER_DEVICES = Signature(
    "vllm_local_world_over_devices", "bad_argument", "the node runs more ranks than it has GPUs",
    ("The parallel layout puts more ranks on this node (tensor x pipeline parallel per node) than the GPUs "
     "it sees: lower `--tensor-parallel-size` to the node's GPUs and use `--pipeline-parallel-size` across "
     "nodes, check `CUDA_VISIBLE_DEVICES`, or (multi-node Ray) use a release that counts the ranks per node "
     "(vllm-project/vllm#28873).",),
    types=r"(?:\w+\.)*AssertionError", patterns=(_LOCAL_WORLD,), lines=(_LOCAL_WORLD,), priority=86,
    phase="launch",
    sources=(("vllm 0.11.1", "vllm/v1/worker/gpu_worker.py:210"), ("vllm 0.13.0", "vllm/v1/worker/gpu_worker.py:210"),
             ("vllm 0.15.1", "vllm/v1/worker/gpu_worker.py:204"), ("vllm 0.21.0", "vllm/v1/worker/gpu_worker.py:268")))

# (round 85) the Ray executor, having placed its workers, finds none on the driver's node (V0, no SPMD worker):
# "Ray does not allocate any GPUs on the driver node. Consider adjusting the Ray placement group or running the
# driver on a GPU node." (0.7.2 vllm/executor/ray_distributed_executor.py:227-230, 0.11.0 :250; 0.5.4
# ray_gpu_executor.py:156): the placement the cluster allows leaves the driver without a GPU, a layout refused like
# ray_utils.py's placement-group refusals (loading.py PLACEMENT_DEVICES, bad_argument). The engine logs the message
# alone on its line (MQLLMEngine's "engine.py:389]" stamp) above the traceback, read as that chain's exception
# (no type named): no types here
_DRIVER_NO_GPU = r"Ray does not allocate any GPUs on the driver node\b"
DRIVER_NO_GPU = Signature(
    "vllm_ray_driver_no_gpu", "bad_argument", "Ray placed no GPU worker on the driver's node",
    ("vLLM's Ray executor needs one GPU worker on the node that runs the engine (the driver), and the placement "
     "group put none there: start `vllm serve` on a node of the Ray cluster with GPUs (the head node, when it has "
     "them), or ask for no more GPUs than the nodes have free (`ray status`) so a bundle lands on the driver's node.",),
    patterns=(_DRIVER_NO_GPU,), lines=(_DRIVER_NO_GPU,), priority=72, phase="launch",
    sources=(("vllm 0.7.2", "vllm/executor/ray_distributed_executor.py:228"),
             ("vllm 0.11.0", "vllm/executor/ray_distributed_executor.py:250"),
             ("vllm 0.5.4", "vllm/executor/ray_gpu_executor.py:156")))

# (round 90) a GPU worker's init_device binds its rank's device, torch.device(f"cuda:{self.local_rank}") then
# torch.cuda.set_device (0.7.3 vllm/worker/worker.py:154-155), whose lazy CUDA init raises torch's "No CUDA GPUs are
# available" where the process sees no device at all (CUDA_VISIBLE_DEVICES empty). vLLM placed a worker on a GPU it
# counted, but the process it runs in was given none: V0's Ray executor (no SPMD worker) runs the rank-0 driver
# worker inside the engine's own process (vllm/executor/ray_distributed_executor.py:214-228 (0.7.3)), so an engine
# started inside a Ray task or actor that asked for no GPU (Ray sets CUDA_VISIBLE_DEVICES="" for it) fails here; so
# does a container or a CUDA_VISIBLE_DEVICES that hides every GPU. A launch the layout refuses, as DRIVER_NO_GPU.
# Read only where init_device raised it (a caller's own tensor on a GPU-less host is not this)
_NO_GPUS = r"\bNo CUDA GPUs are available\b"
WORKER_NO_VISIBLE_GPU = Signature(
    "vllm_worker_no_visible_gpu", "bad_argument", "a vLLM worker's process sees no GPU at all",
    ("A vLLM worker set up its GPU (init_device) in a process that sees none: CUDA_VISIBLE_DEVICES is empty there. "
     "Under Ray, V0's engine runs rank 0's worker in its own process, so the task or actor that creates the engine "
     "must hold a GPU itself (Ray Data: `num_gpus=1` on the map that builds the LLM, or `VLLM_USE_V1=1`); otherwise "
     "check `echo $CUDA_VISIBLE_DEVICES` and that the container sees its GPUs (`nvidia-smi` inside it).",),
    types=r"(?:\w+\.)*RuntimeError", patterns=(_NO_GPUS,), context=(r", in init_device\s*$",), priority=72,
    phase="launch",
    sources=(("vllm 0.7.3", "vllm/worker/worker.py:155"),
             ("vllm 0.7.3", "vllm/executor/ray_distributed_executor.py:223")))

# (round 105) --numa-bind binds each engine core and worker to its GPU's NUMA node; without --numa-bind-nodes vLLM
# asks the platform for the map (get_auto_numa_nodes), which it does not attempt on a process whose CPU affinity is
# already constrained (a Slurm or cgroup CPU set: "CPU affinity is already constrained for this process. Skipping
# automatic NUMA binding; pass --numa-bind-nodes explicitly to override."), without the right to set a memory policy
# (Docker without SYS_NICE), on a one-node host or a platform that has no map (0.30.0 vllm/utils/numa_utils.py:59-99),
# and then _get_numa_node refuses the launch: "NUMA binding was requested, but vLLM could not detect the GPU-to-NUMA
# topology automatically. Pass --numa-bind-nodes explicitly or disable --numa-bind." (:249-258; 0.23.0 :254, 0.33.0
# :231, 0.34.0 :330). A flag this host cannot honour as given, refused with the flags that fix it, before any
# engine core starts
_NUMA_UNDETECTED = (r"\bNUMA binding was requested, but vLLM could not detect the GPU-to-NUMA topology "
                    r"automatically\b")
NUMA_NODES_UNDETECTED = Signature(
    "vllm_numa_nodes_undetected", "bad_argument", "--numa-bind without --numa-bind-nodes on a host vLLM cannot map",
    ("`--numa-bind` asks vLLM to bind each engine core and worker to its GPU's NUMA node, and it could not detect "
     "the GPU-to-NUMA map on this host by itself (it does not try where the process's CPU affinity is already "
     "constrained, as under Slurm or a cgroup CPU set, nor without the right to set a memory policy, a container "
     "without the SYS_NICE capability): pass the nodes explicitly, `--numa-bind-nodes` one per GPU "
     "(`nvidia-smi topo -m` names each GPU's NUMA affinity), or drop `--numa-bind` and let the scheduler's CPU "
     "binding stand.",),
    types=r"(?:\w+\.)*RuntimeError", patterns=(_NUMA_UNDETECTED,), lines=(_NUMA_UNDETECTED,), priority=86,
    phase="launch",
    sources=(("vllm 0.30.0", "vllm/utils/numa_utils.py:254"), ("vllm 0.30.0", "vllm/utils/numa_utils.py:74"),
             ("vllm 0.23.0", "vllm/utils/numa_utils.py:254"), ("vllm 0.33.0", "vllm/utils/numa_utils.py:231"),
             ("vllm 0.34.0", "vllm/utils/numa_utils.py:330")))

# (round 110) the V1 multiproc executor starts one worker per rank on this node with local_rank=rank (0.10.0
# vllm/v1/executor/multiproc_executor.py:86), each in its own process that inherits the engine's device set (the
# executor sets no CUDA_VISIBLE_DEVICES per worker, as Ray does), and the worker binds cuda:{local_rank} in
# init_device (0.10.0 vllm/v1/worker/gpu_worker.py:155-156; 0.10.1.1 :166-167; ROCm's platform.set_device is
# torch.cuda.set_device, vllm/platforms/rocm.py:249), whose cudaSetDevice/hipSetDevice refuses an index past the
# process's devices: "CUDA error: invalid device ordinal" / "HIP error: invalid device ordinal" from torch's
# set_device (torch 2.8.0 torch/cuda/__init__.py:569; torch.AcceleratorError from 2.8, RuntimeError before). So more
# ranks on the node than GPUs it sees: the layout 0.11.1+ refuses first with LOCAL_WORLD_OVER_DEVICES's assert
# (0.11.1 vllm/v1/worker/gpu_worker.py:210). The mp backend is chosen with too few devices where the platform is not
# CUDA (ROCm: the device-count check that moves to Ray is is_cuda() only, 0.10.0 vllm/config.py:2156-2163) or where
# --distributed-executor-backend mp is given. Read only in the mp worker's start (worker_main) with torch's
# set_device the raising frame; a Ray worker's invalid ordinal (devices Ray made visible, w8907) or one raised
# elsewhere is not this
_ORDINAL = r"\b(?:CUDA|HIP) error: invalid device ordinal\b"
MP_RANK_PAST_DEVICES = Signature(
    "vllm_mp_rank_past_devices", "bad_argument", "a multiproc worker's rank has no GPU of its own on this node",
    ("vLLM's multiprocessing executor runs one worker per rank on this node and binds rank N to GPU N, and a rank "
     "found no such GPU: the tensor x pipeline parallel size is larger than the GPUs this process sees. Lower "
     "`--tensor-parallel-size` to the node's GPUs (`rocm-smi` / `nvidia-smi` inside the container), give the "
     "container all of them (`CUDA_VISIBLE_DEVICES`, `HIP_VISIBLE_DEVICES`, docker's device list), or, to span "
     "nodes, start with `--distributed-executor-backend ray` on the Ray cluster.",),
    types=r"(?:\w+\.)*(?:RuntimeError|AcceleratorError)", patterns=(_ORDINAL,),
    context=(r", in worker_main\s*$", r", in init_device\s*$",
             r'torch/cuda/__init__\.py", line \d+, in set_device\s*\n' + NO_LATER_FRAME), priority=80,
    phase="launch",
    sources=(("vllm 0.10.0", "vllm/v1/executor/multiproc_executor.py:86"),
             ("vllm 0.10.0", "vllm/v1/worker/gpu_worker.py:156"), ("vllm 0.10.0", "vllm/platforms/rocm.py:249"),
             ("vllm 0.10.0", "vllm/config.py:2156"), ("vllm 0.11.1", "vllm/v1/worker/gpu_worker.py:210"),
             ("torch 2.8.0", "torch/cuda/__init__.py:569")))

SIGNATURES: list[Signature] = [SIZE_NOT_DIVISIBLE, HEADS_NOT_DIVISIBLE, LOCAL_WORLD_OVER_DEVICES, DRIVER_NO_GPU,
                               WORKER_NO_VISIBLE_GPU, NUMA_NODES_UNDETECTED, MP_RANK_PAST_DEVICES]
