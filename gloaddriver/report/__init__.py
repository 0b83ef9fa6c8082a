"""What a result becomes: the text table, the JSON file, the HTML page; and result
files read back for ``gloaddriver compare``, ``merge`` and ``html``."""
from __future__ import absolute_import, division, print_function
