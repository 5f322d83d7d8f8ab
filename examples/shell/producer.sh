#!/bin/sh
# Enqueues jobs on an echo_mq queue, in POSIX sh with curl and jq.
#
# Each argument is one job's payload as JSON; with no argument it enqueues
# one job {"ms": 1000}. It prints "<id> <state>" per job:
#
#     sh producer.sh '{"ms": 2000}' '{"fail": "boom"}'
#
# It reads EMQ_URL, EMQ_QUEUE and EMQ_API_KEY like the worker, and backs off
# like it when the service answers 503 or cannot be reached.

set -u

EMQ_URL=${EMQ_URL:-http://127.0.0.1:8080}
EMQ_QUEUE=${EMQ_QUEUE:-jobs}
EMQ_API_KEY=${EMQ_API_KEY:-}

JOBS_URL="${EMQ_URL%/}/queues/$EMQ_QUEUE/jobs"

log() { printf '%s\n' "$*" >&2; }

for tool in curl jq; do
	command -v "$tool" >/dev/null 2>&1 || { log "$tool is missing: install it (apt-get install -y $tool)"; exit 1; }
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/emq-producer.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
trap 'exit 1' TERM INT # so that the EXIT trap runs
{
	echo 'header = "Content-Type: application/json"'
	[ -n "$EMQ_API_KEY" ] && echo "header = \"Authorization: Bearer $EMQ_API_KEY\""
} >"$TMP/curlrc"

# enqueue BODY POSTs one job and sets $status; the answer is in $TMP/body.
# On 503 or a connection error it waits (Retry-After, else 0.5 s doubling up
# to 30 s) and sends it again. That can make a second job if the first one
# was stored but its answer lost; give jobs an "id" to make that safe.
enqueue() {
	backoff_ms=500
	while :; do
		rm -f "$TMP/headers" # no Retry-After left over from the last try
		status=$(curl -sS -K "$TMP/curlrc" --max-time 30 -o "$TMP/body" -D "$TMP/headers" \
			-w '%{http_code}' --data-binary "$1" "$JOBS_URL" 2>"$TMP/err") || status=000
		case $status in
		503 | 000) ;;
		*) return 0 ;;
		esac
		pause_ms=$(grep -i '^retry-after:' "$TMP/headers" 2>/dev/null | tr -cd '0-9')
		pause_ms=$((${pause_ms:-0} * 1000))
		[ "$pause_ms" -gt 0 ] || pause_ms=$backoff_ms
		pause=$(awk -v ms="$pause_ms" 'BEGIN { print ms / 1000 }')
		log "backing off ${pause}s: $status $(head -n 1 "$TMP/err" 2>/dev/null)"
		sleep "$pause"
		backoff_ms=$((backoff_ms * 2))
		[ "$backoff_ms" -gt 30000 ] && backoff_ms=30000
	done
}

[ $# -gt 0 ] || set -- '{"ms": 1000}'
for payload in "$@"; do
	if ! body=$(jq -cn --argjson p "$payload" '{payload: $p}' 2>/dev/null); then
		log "a payload is not JSON: $payload"
		exit 2
	fi
	enqueue "$body"
	case $status in
	200 | 201) jq -r '"\(.id) \(.state)"' "$TMP/body" ;;
	*)
		log "enqueue refused: $status $(cat "$TMP/body")"
		exit 1
		;;
	esac
done
