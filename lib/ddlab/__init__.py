"""ddlab: lab notebooks for debugging speculative-decoding deployments.

Deploy a config variant of an SGLang (DDTree / DFlash) server as a systemd
unit or a plain process, watch it until ready or crashed, capture and classify
the crash, sweep budget x top-k cap x CUDA graphs, plot and report. The
library does the work; notebooks in ``notebooks/`` hold parameters and display.
"""

from ddlab.errors import DdlabError

__version__ = "0.1.0"
__all__ = ["DdlabError", "__version__"]
