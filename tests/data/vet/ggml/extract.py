"""Cut the build facts vet's GGML reader needs out of real llama-cpp-python sdists (run once, by
hand; the tests never download): each CMake file's ``option(`` lines verbatim, pyproject.toml
whole, and the paths of the ggml source tree (no contents). Writes ``<sdist name>.json`` here.

    pip download llama-cpp-python==0.3.16 --no-deps --no-binary :all: -d /tmp/x
    python tests/data/vet/ggml/extract.py /tmp/x/llama_cpp_python-0.3.16.tar.gz
"""

from __future__ import annotations

import json
import re
import sys
import tarfile
from pathlib import Path

KEEP_PATH = re.compile(r"(?:^|/)(?:ggml[^/]*\.(?:c|cu|cpp|m)|ggml-[a-z]+/CMakeLists\.txt)$")
OPTION = re.compile(r"^[ \t]*option\s*\(")


def extract(sdist: Path) -> dict[str, object]:
    files: dict[str, str] = {}
    paths: list[str] = []
    with tarfile.open(sdist) as tf:
        for member in tf.getmembers():
            name = member.name
            base = name.rsplit("/", 1)[-1]
            if not member.isfile():
                continue
            if base == "pyproject.toml" and name.count("/") == 1:
                stream = tf.extractfile(member)
                assert stream is not None
                files[name] = stream.read().decode()
            elif base == "CMakeLists.txt" and "/ggml-" not in name:
                stream = tf.extractfile(member)
                assert stream is not None
                lines = [
                    f"{line}  # line {i}"
                    for i, line in enumerate(stream.read().decode().splitlines(), 1)
                    if OPTION.match(line)
                ]
                if lines:
                    files[name] = "\n".join(lines) + "\n"
            elif KEEP_PATH.search(name):
                paths.append(name)
    return {
        "source": f"PyPI sdist {sdist.name} (pip download --no-binary :all:): the option( lines of its "
        "CMakeLists.txt files verbatim (each with its line number), pyproject.toml whole, the ggml source paths",
        "files": files,
        "paths": sorted(paths),
    }


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        sdist = Path(arg)
        out = Path(__file__).with_name(sdist.name.removesuffix(".tar.gz") + ".json")
        out.write_text(json.dumps(extract(sdist), indent=1) + "\n")
        print(out)
