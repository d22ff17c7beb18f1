"""A plugin whose module calls sys.exit while it is imported (SystemExit is not an
Exception: a plain `except Exception` lets it end the program)."""

import sys

sys.exit("emb_sysexit: simulated sys.exit while importing")
