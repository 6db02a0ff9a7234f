"""``jit.on_import_path`` and ``jit.has_fallback`` on small source texts.

Each case is (source, marker, expected): the functions are asked at the first occurrence of
``marker`` in the source, the offset scan.py passes (the start of the rule's regex match).
"""

from __future__ import annotations

import pytest

from pytest_rocm.vet import reach as jit

LOAD = "from torch.utils.cpp_extension import load\n"
K = "load(name='k', sources=['k.cu'])"  # the call the cases look for

IMPORT_PATH: dict[str, tuple[str, str, bool]] = {
    # -- the shapes the scan tests cover (test_vet_false_verdicts: 3 -- JIT) --
    "at module level": (
        "import os\n" + LOAD + "_src = os.path.dirname(__file__)\n"
        "_C = load(name='_raster', sources=[os.path.join(_src, 'csrc', 'raster.cu')])\n",
        "load(name",
        True,
    ),
    "via a helper module level calls": (
        LOAD
        + "def _build():\n    return load(name='_raster',\n                sources=['csrc/raster.cu'])\n_C = _build()\n",
        "load(name",
        True,
    ),
    "peft: lazily, with a fallback": (
        LOAD + "_fbd = None\ndef get_fbd_cuda():\n    global _fbd\n    try:\n"
        "        _fbd = load(name='fbd_cuda', sources=['fbd/fbd_cuda.cu'])\n"
        "    except Exception:\n        _fbd = None\n    return _fbd\n",
        "load(name",
        False,
    ),
    "the full dotted name": (
        "import torch.utils.cpp_extension\n_C = torch.utils.cpp_extension.load(name='k', sources=['k.cu'])\n",
        "cpp_extension.load(",
        True,
    ),
    "in a module-level try": (LOAD + f"try:\n    _C = {K}\nexcept Exception:\n    _C = None\n", K, True),
    "in a class body": (LOAD + f"class Ops:\n    _C = {K}\n", K, True),
    "in a default argument value": (LOAD + f"def op(x, mod={K}):\n    return mod.f(x)\n", K, True),
    # -- the old reading's false answers --
    "a method; the class is only instantiated": (
        LOAD + f"class Kernel:\n    def build(self):\n        return {K}\n\nKERNEL = Kernel()\n",
        K,
        False,
    ),
    "a method; the class is only named in a call": (
        LOAD + f"class Kernel:\n    def build(self):\n        return {K}\n\nregister(Kernel)\n",
        K,
        False,
    ),
    "a docstring names the function with a parenthesis": (
        '"""Call _build() to compile the kernel."""\n' + LOAD + f"def _build():\n    return {K}\n",
        K,
        False,
    ),
    "a comment inside a multi-line call names it": (
        LOAD + "OPTS = dict(\n    # _build() runs on first use\n    verbose=False,\n)\n"
        f"def _build():\n    return {K}\n",
        K,
        False,
    ),
    "a string at module level holds the call": (
        LOAD + f'HELP = "run _C = _build() to compile"\ndef _build():\n    return {K}\n',
        K,
        False,
    ),
    "a multi-line string holds the call": (
        LOAD + f'USAGE = """\n    _C = _build()\n"""\ndef _build():\n    return {K}\n',
        K,
        False,
    ),
    "a load( in a comment is no call": (LOAD + "# _C = load(name='k', sources=['k.cu'])\n", "load(", False),
    "a load( in a string is no call": (LOAD + "print(\"_C = load(name='k', sources=['k.cu'])\")\n", "load(", False),
    "a plain name does not call a method": (
        LOAD + f"class A:\n    def build(self):\n        return {K}\n\nbuild()\n",
        K,
        False,
    ),
    # -- methods and constructors module level calls --
    "a method called on an instance at module level": (
        LOAD + f"class Kernel:\n    def build(self):\n        return {K}\n\n_C = Kernel().build()\n",
        K,
        True,
    ),
    "a static method called on the class": (
        LOAD + f"class Kernel:\n    @staticmethod\n    def build():\n        return {K}\n\n_C = Kernel.build()\n",
        K,
        True,
    ),
    "__init__ of a class instantiated at module level": (
        LOAD + f"class Kernel:\n    def __init__(self):\n        self.mod = {K}\n\nKERNEL = Kernel()\n",
        K,
        True,
    ),
    "a method __init__ calls through self": (
        LOAD + "class Kernel:\n    def __init__(self):\n        self.mod = self._compile()\n"
        f"    def _compile(self):\n        return {K}\n\nKERNEL = Kernel()\n",
        K,
        True,
    ),
    "an inherited __init__": (
        LOAD + f"class Base:\n    def __init__(self):\n        self.mod = {K}\nclass K(Base):\n    pass\nK()\n",
        K,
        True,
    ),
    "super().__init__()": (
        LOAD + f"class Base:\n    def __init__(self):\n        self.mod = {K}\n"
        "class K(Base):\n    def __init__(self):\n        super().__init__()\nK()\n",
        K,
        True,
    ),
    # -- decorators --
    "a decorator applied at module level": (
        LOAD + f"def _with_kernel(fn):\n    fn.mod = {K}\n    return fn\n\n@_with_kernel\ndef op(x):\n    return x\n",
        K,
        True,
    ),
    "a decorator factory called at module level": (
        LOAD + f"def _with_kernel(name):\n    mod = {K}\n    return lambda fn: fn\n\n"
        "@_with_kernel('k')\ndef op(x):\n    return x\n",
        K,
        True,
    ),
    "a decorated function nobody calls": (
        LOAD + f"import functools\n@functools.lru_cache\ndef _build():\n    return {K}\n",
        K,
        False,
    ),
    # -- the call graph --
    "a transitive chain: a() -> b() -> load": (
        LOAD + f"def b():\n    return {K}\ndef a():\n    return b()\n_C = a()\n",
        K,
        True,
    ),
    "a chain through a class: A() -> __init__ -> helper": (
        LOAD + f"def helper():\n    return {K}\nclass A:\n    def __init__(self):\n        self.m = helper()\nA()\n",
        K,
        True,
    ),
    "a nested def the called function calls": (
        LOAD + f"def _outer():\n    def _inner():\n        return {K}\n    return _inner()\n_C = _outer()\n",
        K,
        True,
    ),
    "only called by a function nobody calls": (
        LOAD + f"def b():\n    return {K}\ndef a():\n    return b()\n",
        K,
        False,
    ),
    "recursion terminates": (LOAD + f"def b(n):\n    return b(n - 1) if n else {K}\n_C = b(2)\n", K, True),
    "a lambda at module level": (LOAD + f"_get = lambda: {K}\n", K, False),
    # -- a script's entry point does not run on import; its else does --
    'in if __name__ == "__main__"': (LOAD + f'if __name__ == "__main__":\n    _C = {K}\n', K, False),
    'a call in if __name__ == "__main__"': (
        LOAD + f"def _build():\n    return {K}\nif '__main__' == __name__:\n    _build()\n",
        K,
        False,
    ),
    'the else of if __name__ == "__main__"': (
        LOAD + f'if __name__ == "__main__":\n    pass\nelse:\n    _C = {K}\n',
        K,
        True,
    ),
    # -- offsets: ast counts a column in UTF-8 bytes, pos in characters --
    "a non-ASCII line above": (LOAD + f'_MSG = "Kernel wird übersetzt — bitte warten"\n_C = {K}\n', K, True),
    "non-ASCII before the call on its line": (LOAD + f'_s = "äöüéèêß—…"; _C = {K}\n', K, True),
    "CRLF line ends": (LOAD.replace("\n", "\r\n") + f"def _build():\r\n    return {K}\r\n_C = _build()\r\n", K, True),
    "a byte order mark": ("\ufeff" + LOAD + f'_s = "é"; _C = {K}\n', K, True),
    "CR line ends (classic Mac)": (
        LOAD.replace("\n", "\r") + f"def _build():\r    return {K}\r_C = _build()\r",
        K,
        True,
    ),
    # -- a file ast cannot read gets the line-based reading, and never raises --
    "a Python 2 file": (LOAD + f'print "building"\ndef _build():\n    return {K}\n_C = _build()\n', K, True),
    "a Python 2 file, opt-in": (LOAD + f'print "x"\ndef _build():\n    return {K}\n', K, False),
    "a null byte": (LOAD + f"_C = {K}\n# \0\n", K, True),
}

FALLBACK: dict[str, tuple[str, str, bool]] = {
    "transformers' probe degrades": (
        "import ctypes\ndef _cuda_version():\n    try:\n        lib = ctypes.CDLL('libcudart.so')\n"
        "    except OSError:\n        return 0, 0\n    return lib.v()\n",
        "'libcudart",
        True,
    ),
    "a binding outside any try (NVML)": (
        "from ctypes import CDLL\nimport sys\n_lib = None\ndef nvmlInit():\n    global _lib\n"
        "    name = 'nvml.dll' if sys.platform == 'win32' else 'libnvidia-ml.so.1'\n"
        "    _lib = CDLL(name)\n    return _lib.nvmlInit_v2()\n",
        "'libnvidia",
        False,
    ),
    "a module-level binding": ("import ctypes\n_nv = ctypes.CDLL('libnvidia-ml.so.1')\n", "'libnvidia", False),
    "a module-level try that passes": (
        "import ctypes\ntry:\n    _nv = ctypes.CDLL('libnvidia-ml.so.1')\nexcept OSError:\n    _nv = None\n",
        "'libnvidia",
        True,
    ),
    "a continuation line of the statement": (
        "import ctypes\ntry:\n    _nv = ctypes.CDLL(\n        'libnvidia-ml.so.1',\n    )\nexcept OSError:\n    _nv = None\n",
        "'libnvidia",
        True,
    ),
    "a handler that re-raises": (
        "import ctypes\ndef load():\n    try:\n        return ctypes.CDLL('libcuda.so')\n"
        "    except OSError as e:\n        raise RuntimeError('needs CUDA') from e\n",
        "'libcuda",
        False,
    ),
    "one of two handlers raises": (
        "import ctypes\ntry:\n    _l = ctypes.CDLL('libcuda.so')\nexcept OSError:\n    _l = None\n"
        "except Exception:\n    raise\n",
        "'libcuda",
        False,
    ),
    "a raise deep in a handler": (
        "import ctypes\ntry:\n    _l = ctypes.CDLL('libcuda.so')\nexcept OSError:\n    if STRICT:\n        raise\n",
        "'libcuda",
        False,
    ),
    "a raise only in a def the handler defines": (
        "import ctypes\ntry:\n    _l = ctypes.CDLL('libcuda.so')\nexcept OSError:\n"
        "    def _l(*a):\n        raise RuntimeError('no CUDA')\n",
        "'libcuda",
        True,
    ),
    "nested: the innermost try decides": (
        "import ctypes\ntry:\n    try:\n        _l = ctypes.CDLL('libcuda.so')\n    except OSError:\n"
        "        _l = None\nexcept Exception:\n    raise\n",
        "'libcuda",
        True,
    ),
    "nested: a statement of the outer body": (
        "import ctypes\ntry:\n    try:\n        pass\n    except OSError:\n        pass\n"
        "    _l = ctypes.CDLL('libcuda.so')\nexcept Exception:\n    raise\n",
        "'libcuda",
        False,
    ),
    "nested: a handler is guarded by the outer try": (
        "import ctypes\ntry:\n    try:\n        _l = ctypes.CDLL('libcudart.so')\n    except OSError:\n"
        "        _l = ctypes.CDLL('libcuda.so')\nexcept OSError:\n    _l = None\n",
        "'libcuda.so",
        True,
    ),
    "the else of a try is not guarded": (
        "import ctypes\ntry:\n    import x\nexcept ImportError:\n    pass\nelse:\n    _l = ctypes.CDLL('libcuda.so')\n",
        "'libcuda",
        False,
    ),
    "try/finally has no handler": (
        "import ctypes\ntry:\n    _l = ctypes.CDLL('libcuda.so')\nfinally:\n    pass\n",
        "'libcuda",
        False,
    ),
    "a try around the def, not in it": (
        "import ctypes\ntry:\n    def probe():\n        return ctypes.CDLL('libcuda.so')\nexcept Exception:\n    pass\n",
        "'libcuda",
        False,
    ),
    "except* carries on": (
        "import ctypes\ntry:\n    _l = ctypes.CDLL('libcuda.so')\nexcept* OSError:\n    _l = None\n",
        "'libcuda",
        True,
    ),
    "a Python 2 file": (
        "import ctypes\nprint 'x'\ntry:\n    _l = ctypes.CDLL('libcuda.so')\nexcept OSError, e:\n    _l = None\n",
        "'libcuda",
        True,
    ),
}


@pytest.mark.parametrize(("source", "marker", "expected"), IMPORT_PATH.values(), ids=IMPORT_PATH.keys())
def test_on_import_path(source: str, marker: str, expected: bool) -> None:
    assert jit.on_import_path(source, source.index(marker)) is expected


@pytest.mark.parametrize(("source", "marker", "expected"), FALLBACK.values(), ids=FALLBACK.keys())
def test_has_fallback(source: str, marker: str, expected: bool) -> None:
    assert jit.has_fallback(source, source.index(marker)) is expected


def test_a_file_is_parsed_once_for_all_its_matches() -> None:
    source = LOAD + f"_A = {K}\n_B = {K}\n# a fresh text\n"
    jit._tree.cache_clear()  # a rerun in this process (--reruns) would find it cached
    before = jit._tree.cache_info()
    for pos in (source.index(K), source.rindex(K)):
        assert jit.on_import_path(source, pos) and not jit.has_fallback(source, pos)
    after = jit._tree.cache_info()
    assert after.misses - before.misses == 1 and after.hits - before.hits == 3


@pytest.mark.parametrize(
    "source",
    [
        "x = " + "-" * 5000 + "1\n" + LOAD + f"_C = {K}\n",  # too deep for the parser
        "class C0:\n    pass\n"  # a base chain deeper than the recursion limit
        + "".join(f"class C{i}(C{i - 1}):\n    pass\n" for i in range(1, 1500))
        + f"C1499()\n_C = {K}\n",
    ],
    ids=["deep nesting", "a long base chain"],
)
def test_a_hostile_file_gets_an_answer(source: str) -> None:
    pos = source.index(K)
    assert jit.on_import_path(source, pos) is True and jit.has_fallback(source, pos) is False


def test_many_matches_in_one_file_are_each_answered_from_its_own_line() -> None:
    """scan.py asks once per match; the calls and statements are looked up by line."""
    body = "".join(f"def f{i}(x):\n    y = g(x, {i})\n    return {K}\n" for i in range(300))
    source = LOAD + body + "_C = f7(1)\n"
    positions = [m for m in range(len(source)) if source.startswith(K, m)]
    called = [jit.on_import_path(source, pos) for pos in positions]
    assert called.count(True) == 1 and called[7]
    assert not any(jit.has_fallback(source, pos) for pos in positions)


def test_the_vetted_files_syntax_warnings_are_not_printed_or_raised() -> None:
    import warnings

    source = LOAD + "PATTERN = '\\d+'\n_C = " + K + "\n"  # '\d': an invalid escape sequence
    jit._tree.cache_clear()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("error")  # as under -W error: the warning would be a SyntaxError
        assert jit._tree(source) is not None  # read with ast, not the line-based fallback
        assert jit.on_import_path(source, source.index(K))
    assert seen == []
