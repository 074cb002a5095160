"""Hostile submissions for capstone D's module ``grpo.py``.

Each is graded with results.json written, a message, no more points than the
blank template (0), and no process of the worker's uid left behind.
``{root}`` is replaced by the grader checkout's path and ``{agroot}`` by
AUTOGRADER_ROOT (a hostile student can guess both).
"""
from __future__ import annotations

from dataclasses import dataclass

BLANK = (
    "import numpy as np\n"
    "def centred_weight(r):\n    return np.zeros_like(np.asarray(r, dtype=float))\n"
    "def group_standardised_weight(r):\n    return np.zeros_like(np.asarray(r, dtype=float))\n"
)


@dataclass(frozen=True)
class Hostile:
    name: str
    source: str
    message: str          # a fragment the feedback must contain ("" = any message)


HOSTILE = [
    Hostile("infinite_loop_at_import", "while True:\n    pass\n", "did not finish"),
    Hostile("infinite_loop_in_function", BLANK + "def centred_weight(r):\n    while True:\n"
            "        pass\n", "CPU budget"),
    Hostile("ignores_sigterm_and_sigxcpu", BLANK +
            "import signal\n"
            "def centred_weight(r):\n"
            "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "    signal.signal(signal.SIGXCPU, signal.SIG_IGN)\n"
            "    while True:\n        pass\n", "CPU budget"),
    Hostile("sleeps_forever", BLANK + "import time\ndef centred_weight(r):\n"
            "    time.sleep(10**6)\n", "did not answer"),
    Hostile("os_exit", BLANK + "import os\ndef centred_weight(r):\n    os._exit(0)\n",
            "exit code 0"),
    Hostile("sys_exit", BLANK + "import sys\ndef centred_weight(r):\n    sys.exit(0)\n",
            "SystemExit"),
    Hostile("segfault_via_ctypes", BLANK + "import ctypes\ndef centred_weight(r):\n"
            "    return ctypes.string_at(0)\n", "signal 11"),
    Hostile("allocates_6_gb", BLANK + "def centred_weight(r):\n"
            "    big = np.ones(6 * 10**9 // 8)\n    return big[:r.size].reshape(r.shape)\n",
            "MemoryError"),
    Hostile("prints_200_mb", BLANK + "import sys\ndef centred_weight(r):\n"
            "    line = 'x' * 1_000_000\n    for _ in range(200):\n        print(line)\n"
            "    return np.zeros_like(r)\n", ""),
    Hostile("monkeypatches_numpy_comparisons", BLANK +
            "np.allclose = lambda *a, **k: True\nnp.array_equal = lambda *a, **k: True\n"
            "np.isclose = lambda a, b, *x, **k: np.ones(np.shape(a), bool)\n"
            "np.testing.assert_allclose = lambda *a, **k: None\n", ""),
    Hostile("reads_grader_files_and_raises_them", BLANK +
            "import glob, os\n"
            "def centred_weight(r):\n"
            "    found = []\n"
            "    for pattern in ['{root}/solutions/*/*.py', '{root}/autograder/expected/*',\n"
            "                    '{root}/autograder/judges/*.py', '{root}/autograder/oracles/*.py',\n"
            "                    '{agroot}/source/autograder/*/*',\n"
            "                    '/autograder/source/autograder/expected/*']:\n"
            "        for path in glob.glob(pattern):\n"
            "            try:\n"
            "                found.append(open(path, 'rb').read()[:3000].decode('latin-1'))\n"
            "            except OSError as e:\n"
            "                found.append(repr(e))\n"
            "    for path in ['{root}/solutions/d_grpo/grpo.py', '{agroot}/source/run_autograder']:\n"
            "        try:\n"
            "            found.append(open(path).read())\n"
            "        except OSError as e:\n"
            "            found.append(repr(e))\n"
            "    raise RuntimeError('LEAK ' + ' | '.join(found))\n", "LEAK"),
    Hostile("rewrites_grader_files", BLANK +
            "def centred_weight(r):\n"
            "    for path in ['{root}/autograder/judges/d_grpo.py', '{root}/autograder/grading/judging.py',\n"
            "                 '{agroot}/source/autograder/grading/judging.py']:\n"
            "        try:\n"
            "            open(path, 'w').write('QUESTIONS = {}')\n"
            "        except OSError:\n"
            "            pass\n"
            "    return np.zeros_like(r)\n", ""),
    Hostile("forges_results_json", BLANK +
            "import json\n"
            "FORGED = json.dumps({'score': 999, 'tests': [], 'output': 'FORGED'})\n"
            "for path in ['results.json', '../results.json', 'home/results.json',\n"
            "             '{agroot}/results/results.json', '/autograder/results/results.json']:\n"
            "    try:\n"
            "        open(path, 'w').write(FORGED)\n"
            "    except OSError:\n"
            "        pass\n", ""),
    Hostile("daemon_forges_results_later", BLANK +
            "import json, os, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n"
            "        for fd in range(0, 256):\n"
            "            try:\n"
            "                os.close(fd)\n"
            "            except OSError:\n"
            "                pass\n"
            "        time.sleep(3)\n"
            "        for path in ['{agroot}/results/results.json',\n"
            "                     '/autograder/results/results.json']:\n"
            "            try:\n"
            "                open(path, 'w').write(json.dumps({'score': 999, 'output': 'FORGED'}))\n"
            "            except OSError:\n"
            "                pass\n"
            "        time.sleep(600)\n"
            "    os._exit(0)\n", ""),
    Hostile("spawns_many_children", BLANK +
            "import os, time\n"
            "def centred_weight(r):\n"
            "    for _ in range(500):\n"
            "        try:\n"
            "            if os.fork() == 0:\n"
            "                time.sleep(600)\n"
            "                os._exit(0)\n"
            "        except OSError:\n"
            "            break\n"
            "    return np.zeros_like(r)\n", ""),
]
