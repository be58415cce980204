"""The two comment lines that mark a build task's region in minifx's source (tests/tasks.py).

Kept apart, with nothing but `re`, so that the grading worker reads the regions with the
very patterns the judge's checks read them with: it runs this file in a namespace of its
own (`task_regions` in tests/grading/worker.py).
"""

import re

START = re.compile(r"^[ \t]*# --8<-- \[task:(?P<id>\d+\.\d+)\](?P<attributes>.*)$")
END = re.compile(r"^[ \t]*# --8<-- \[end-task:(?P<id>\d+\.\d+)\][ \t]*$")
