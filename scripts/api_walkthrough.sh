#!/usr/bin/env bash
# The loop from zero through the REST API: create → import → generate → route → annotate →
# train → autolabel → export (docs/api.md, "Walk-through", embeds this file verbatim).
# Needs curl and jq. TOKEN: a researcher's API token; ME: that researcher's username; BASE: the
# server; DATA: a pairs-jsonl file with labelled originals; NAME: the new project's name.
set -euo pipefail
BASE=${BASE:-http://127.0.0.1:8000}
DATA=${DATA:-projects/fixtures/demo_nli_pairs.jsonl}
NAME=${NAME:-walkthrough-$(date +%s)}
: "${TOKEN:?set TOKEN to the API token of a researcher, see docs/api.md}"
: "${ME:?set ME to the username of that researcher (the account that annotates in step 5)}"

api() { # api METHOD PATH [curl options]: the answer's body; an HTTP error stops the script
  local method=$1 path=$2
  shift 2
  curl -sS --fail-with-body -X "$method" -H "Authorization: Token $TOKEN" "$@" "$BASE$path"
}

json() { # json METHOD PATH BODY: send a JSON body
  api "$1" "$2" -H 'Content-Type: application/json' -d "$3"
}

wait_job() { # wait_job JOB: poll the job until it has ended; stop unless it succeeded
  local job status
  while :; do
    job=$(api GET "/api/v1/jobs/$1/")
    status=$(jq -r .status <<<"$job")
    jq -r '"  job \(.id) (\(.kind)): \(.status) \(.done)/\(.total)"' <<<"$job" >&2
    case $status in
      succeeded) return 0 ;;
      failed | cancelled) jq -r '"job \(.id) \(.status): \(.error)"' <<<"$job" >&2 && return 1 ;;
    esac
    if [ -n "$(jq -r '.stalled // ""' <<<"$job")" ]; then # e.g. no worker consumes its queue
      jq -r '"job \(.id): \(.stalled)"' <<<"$job" >&2 && return 1
    fi
    sleep 2
  done
}

# 1. Create the project (researchers). k=1: one answer per item is enough for this walk-through.
PROJECT=$(json POST /api/v1/projects/ "{\"name\": \"$NAME\", \"task\": \"nli\", \"annotators_per_item\": 1}" | jq .id)
echo "project $PROJECT"

# 2. Import the originals (and any pairs) from a file. An answer that is a job is polled.
IMPORT=$(api POST "/api/v1/projects/$PROJECT/import/" -F format=pairs-jsonl -F "file=@$DATA")
if jq -e 'has("status")' <<<"$IMPORT" >/dev/null; then wait_job "$(jq .id <<<"$IMPORT")"; fi

# 3. Generate counterfactual candidates with the fast rule-based generator; the run is a job.
#    The perplexity filter (a small language model) is left out here to keep it quick.
OPTIONS='{"seed": 1, "filters": ["similarity", "dedup", "artifacts"]}'
RUN=$(json POST "/api/v1/generation/projects/$PROJECT/runs/" "{\"generator\": \"rules\", \"options\": $OPTIONS}")
wait_job "$(jq .job <<<"$RUN")"

# 4. Route a share of the pool to the annotators (a route job).
wait_job "$(json POST "/api/v1/projects/$PROJECT/route/" '{"budget": 0.3, "seed": 1}' | jq .id)"

# 5. Annotate. People do this on /annotate/; here the script answers every routed item
#    itself, going round the project's labels, until next-item says 204 (nothing left).
#    Only annotator members answer items, so the researcher first joins as one.
json POST "/api/v1/projects/$PROJECT/members/add/" "{\"username\": \"$ME\", \"role\": \"annotator\"}" >/dev/null
LABELS=($(api GET /api/v1/projects/ | jq -r ".[] | select(.id == $PROJECT) | .labels[]"))
answered=0
while ITEM=$(api POST "/api/v1/projects/$PROJECT/next-item/") && [ -n "$ITEM" ]; do
  CHOICE=${LABELS[answered % ${#LABELS[@]}]}
  json POST "/api/v1/assignments/$(jq .assignment <<<"$ITEM")/annotation/" "{\"choice\": \"$CHOICE\"}" >/dev/null
  answered=$((answered + 1))
done
echo "answered $answered items"

# 6. Train the pairwise classifier h on the human labels (a train job). PC mode: CAPC also
#    needs labelled originals of every label (docs/labelling.md).
wait_job "$(json POST "/api/v1/projects/$PROJECT/train/" '{"mode": "pc"}' | jq .id)"

# 7. Auto-label the rest of the pool with h (an autolabel job).
wait_job "$(json POST "/api/v1/projects/$PROJECT/autolabel/" '{"min_confidence": 0.5}' | jq .id)"

# 8. Export the labelled pairs (an export job), then download its file.
EXPORT=$(json POST "/api/v1/projects/$PROJECT/export/" '{"state": ["human_labeled", "auto_labeled"], "run_as_job": true}')
wait_job "$(jq .id <<<"$EXPORT")"
api GET "/api/v1/exports/$(jq .id <<<"$EXPORT")/download/" -o "$NAME.jsonl"
echo "exported $(wc -l <"$NAME.jsonl") pairs to $NAME.jsonl"
api GET /api/v1/projects/ | jq -c ".[] | select(.id == $PROJECT) | .counts"
