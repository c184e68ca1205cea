"""Print one of README.md's code blocks for CI, exactly as written.

``setup N``: the N-th (1-based) ```bash block of the "Set up" section, the commands a new user
runs. ``async``: the ```python block that runs the async API (``asyncio.run``).
"""

import re
import sys
from pathlib import Path

readme = Path(__file__).resolve().parent.parent.joinpath("README.md").read_text(encoding="utf-8")
blocks = re.findall(r"^```(\w+)\n(.*?)^```", readme, flags=re.M | re.S)
what = sys.argv[1]
if what == "setup":
    section = readme.split("\n## Set up", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^```bash\n(.*?)^```", section, flags=re.M | re.S)
    print(commands[int(sys.argv[2]) - 1].strip())
elif what == "async":
    print(next(code for kind, code in blocks if kind == "python" and "asyncio.run(" in code))
else:
    sys.exit(f"unknown block {what!r}")
