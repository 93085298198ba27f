"""``python -m ddlab.target [SGLang flags]``: run the target server."""

import sys

from ddlab.target import main

sys.exit(main())
