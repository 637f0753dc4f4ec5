"""The grader's child process and the plain data it exchanges with the grader.

One child per exercise, from a clean interpreter: it reruns the learner's cells that recreate the answer,
then answers the grader's calls (`answer(*args)`) with plain data only. The verdict is never decided here:
everything in this process, this file's code included, is the learner's to change, so the grader reads
what it sends as untrusted bytes (`decode(..., trusted=False)`), never as a pickle.

Plain data: None, bool, int, float, str, bytes, Ellipsis, list, tuple, set, frozenset, dict, NumPy arrays and
scalars of numbers or booleans (as .npy bytes, allow_pickle=False) and torch tensors (the same, with their
dtype). Subclasses are not plain: a float that prints 3.0 but converts to 16 is refused, not converted.
"""

import base64
import io
import json
import os
import sys

MAX_DEPTH = 32
MAX_BYTES = 64 * 2**20  # the largest message the grader reads from a child
TORCH_DTYPES = "bool uint8 int8 int16 int32 int64 float16 bfloat16 float32 float64 complex64 complex128".split()
NUMERIC_KINDS = "biufc"


class NotPlain(Exception):
    """A value that is not plain data (its type's name is the message)."""


def _npy(array):
    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def encode(value, trusted=False, depth=0):
    """`value` as JSON-ready plain data; NotPlain for anything else (with `trusted`, the grader's own
    arguments, an object such as an nn.Module travels as a pickle instead)."""
    if depth > MAX_DEPTH:
        raise NotPlain("a value nested more than 32 levels deep")
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return value
    if kind is float:
        return {"float": repr(value)}
    if kind is bytes:
        return {"bytes": base64.b64encode(value).decode("ascii")}
    if value is Ellipsis:
        return {"ellipsis": True}
    if kind in (list, tuple, set, frozenset):
        return {kind.__name__: [encode(v, trusted, depth + 1) for v in value]}
    if kind is dict:
        return {"dict": [[encode(k, trusted, depth + 1), encode(v, trusted, depth + 1)] for k, v in value.items()]}
    np = sys.modules.get("numpy")
    torch = sys.modules.get("torch")
    if np is not None and kind is np.ndarray and value.dtype.kind in NUMERIC_KINDS:
        return {"ndarray": _npy(np.ascontiguousarray(value))}
    if np is not None and isinstance(value, np.generic) and np.dtype(kind).kind in NUMERIC_KINDS:
        if kind is np.dtype(kind).type:  # a NumPy scalar type itself, not a subclass of one
            return {"npscalar": _npy(np.asarray(value))}
    if torch is not None and kind in (torch.Tensor, torch.nn.Parameter) and not value.is_sparse:
        dtype = str(value.dtype).removeprefix("torch.")
        if dtype in TORCH_DTYPES:
            tensor = value.detach().cpu().resolve_conj().resolve_neg()
            as_numpy = tensor.float() if dtype == "bfloat16" else tensor
            return {"tensor": _npy(np.ascontiguousarray(as_numpy.numpy())), "dtype": dtype}
    if trusted:
        import pickle

        return {"pickle": base64.b64encode(pickle.dumps(value)).decode("ascii")}
    raise NotPlain(f"{kind.__module__}.{kind.__qualname__}")


def _array(text):
    import numpy as np

    array = np.load(io.BytesIO(base64.b64decode(text, validate=True)), allow_pickle=False)
    if type(array) is not np.ndarray or array.dtype.kind not in NUMERIC_KINDS or array.dtype.byteorder == ">":
        raise ValueError("not an array of numbers")
    return array


def decode(data, trusted=False, depth=0):
    """The value `encode` gave `data` for. Untrusted data (from a child) is checked field by field: a
    malformed message raises ValueError, never runs code."""
    if depth > MAX_DEPTH:
        raise ValueError("nested too deeply")
    if data is None or type(data) in (bool, int, str):
        return data
    if type(data) is not dict or len(data) not in (1, 2):
        raise ValueError(f"unexpected {type(data).__name__}")
    (tag, body), *rest = data.items()
    if tag == "float" and type(body) is str and not rest:
        return float(body)
    if tag == "bytes" and type(body) is str and not rest:
        return base64.b64decode(body, validate=True)
    if tag == "ellipsis" and body is True and not rest:
        return Ellipsis
    if tag in ("list", "tuple", "set", "frozenset") and type(body) is list and not rest:
        items = [decode(v, trusted, depth + 1) for v in body]
        return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
    if tag == "dict" and type(body) is list and not rest:
        pairs = [(decode(k, trusted, depth + 1), decode(v, trusted, depth + 1)) for k, v in body]
        return dict(pairs)
    if tag == "ndarray" and type(body) is str and not rest:
        return _array(body).copy()
    if tag == "npscalar" and type(body) is str and not rest:
        array = _array(body)
        if array.shape != ():
            raise ValueError("a scalar with a shape")
        return array[()]
    if tag == "tensor" and type(body) is str and rest and rest[0][0] == "dtype" and rest[0][1] in TORCH_DTYPES:
        import torch

        return torch.from_numpy(_array(body).copy()).to(getattr(torch, rest[0][1]))
    if tag == "pickle" and trusted and type(body) is str and not rest:
        import pickle

        return pickle.loads(base64.b64decode(body))
    raise ValueError(f"unexpected field {tag!r}")


def send(conn, message):
    conn.send_bytes(json.dumps(message).encode())


def receive(conn, maxlength=MAX_BYTES):
    return json.loads(conn.recv_bytes(maxlength))


# ---------------------------------------------------------------------------------------------------
# The child itself


def _recorder(module, log):
    """Stands for `check`: `check.NAME(answer)` appends (module, NAME, answer) to `log`; nothing else does anything."""

    class Slot:
        def __init__(self, attr):
            object.__setattr__(self, "_attr", attr)

        def __call__(self, answer=None, *args, **kwargs):
            log.append((module, object.__getattribute__(self, "_attr"), answer))

        def __getattr__(self, name):  # check.NAME.hint(), .solution(): no-ops here
            return lambda *args, **kwargs: None

    class Module:
        def __getattr__(self, attr):
            if attr.startswith("__"):
                raise AttributeError(attr)
            return Slot(attr)

    return Module()


class _NoIPython:
    """What get_ipython() returns in the child: magics and shell escapes do nothing."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def _error(err):
    return {"type": type(err).__name__[:100], "message": str(err)[:2000]}


def _outcome(payload):
    """Rerun the cells that recreate the answer: (a message for the grader, the answer or None)."""
    import builtins

    log = []
    ns = {"__name__": "__main__", "__builtins__": builtins, "get_ipython": _NoIPython}
    for source in payload["imports"]:
        try:
            exec(compile(source, "<imports>", "exec"), ns)
        except BaseException:  # an import the answer does not need may fail; one it needs fails below
            pass
    ns.update({alias: _recorder(module, log) for alias, module in payload["aliases"].items()})
    key = [payload["module"], payload["attr"]]

    def answers():
        return [answer for module, attr, answer in log if [module, attr] == key]

    for number, source in payload["cells"]:
        if number == payload["target"]:
            log.clear()
        try:
            exec(compile(source, f"<cell {number}>", "exec"), ns)
        except BaseException as err:
            if number == payload["target"] and answers():
                break  # the cell failed after its check call: judge the answer it gave
            return {"outcome": "raised", "cell": number, **_error(err)}, None
    if payload.get("answer") is not None:  # the answer is a name's value; its check cell was not rerun
        if payload["answer"] not in ns:
            error = NameError(f"name {payload['answer']!r} is not defined")
            return {"outcome": "raised", "cell": payload["target"], **_error(error)}, None
        log.append((payload["module"], payload["attr"], ns[payload["answer"]]))
    if not answers():
        return {"outcome": "no call"}, None
    answer = answers()[-1]
    if callable(answer):
        return {"outcome": "callable"}, answer
    try:
        return {"outcome": "value", "value": encode(answer)}, None
    except NotPlain as err:
        return {"outcome": "not plain", "type": str(err)}, None


def main(conn, payload):
    """Recreate one answer, send what it is, then answer the grader's calls until it stops this process."""
    sys.stdout = sys.stderr = open(os.devnull, "w")  # learner prints go nowhere; answers go over `conn`
    os.chdir(payload["cwd"])
    sys.path.append(payload["cwd"])  # like the kernel, which runs in the notebook's folder
    send(conn, {"ready": True})
    message, answer = _outcome(payload)
    send(conn, message)
    while answer is not None:
        request = receive(conn, maxlength=None)
        try:
            args, kwargs = decode(request["args"], trusted=True), decode(request["kwargs"], trusted=True)
            result = answer(*args, **kwargs)
        except BaseException as err:  # SystemExit and KeyboardInterrupt too: a reply, not a lost child
            reply = {"raised": _error(err)}
        else:
            try:
                reply = {"returned": encode(result)}
            except NotPlain as err:
                reply = {"not plain": str(err)}
        send(conn, reply)


# The child's first lines: only the standard library until it has the grader's sys.path, so it imports the
# very utils the grader runs, whatever started the grader.
BOOT = (
    "import sys, json; from multiprocessing.connection import Connection; conn = Connection(int(sys.argv[1])); "
    "payload = json.loads(conn.recv_bytes()); sys.path[:] = payload['sys_path']; "
    "from utils.course.grade_child import main; main(conn, payload)"
)
