#!/bin/sh
# Enqueues jobs on an echo_mq queue, in POSIX sh with curl and jq.
#
# Each argument is one job's payload as JSON; with no argument it enqueues
# one job {"ms": 1000}. It prints "<id> <state>" per job:
#
#     sh producer.sh '{"ms": 2000}' '{"fail": "boom"}'
#
# It reads EMQ_URL, EMQ_QUEUE and EMQ_API_KEY like the worker, and backs off
# like it when the service answers 502, 503 or 504 or cannot be reached.
# Each job gets its id here, so sending an enqueue again never makes a
# second job.

set -u

EMQ_URL=${EMQ_URL:-http://127.0.0.1:8080}
EMQ_QUEUE=${EMQ_QUEUE:-jobs}
EMQ_API_KEY=${EMQ_API_KEY:-}

JOBS_URL="${EMQ_URL%/}/queues/$EMQ_QUEUE/jobs"
CALL_TIMEOUT_S=30 # a call that takes longer counts as a connection error
MAX_BACKOFF_MS=30000

log() { printf '%s\n' "$*" >&2; }

for tool in curl jq; do
	command -v "$tool" >/dev/null 2>&1 || { log "$tool is missing: install it (apt-get install -y $tool)"; exit 1; }
done

# Every argument is checked before any job is sent: a typo in the third
# payload must not leave the first two enqueued.
[ $# -gt 0 ] || set -- '{"ms": 1000}'
for payload in "$@"; do
	if ! printf '%s' "$payload" | jq -es 'length == 1' >/dev/null 2>&1; then
		log "a payload is not JSON: $payload"
		exit 2
	fi
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/emq-producer.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
trap 'exit 1' TERM INT # so that the EXIT trap runs
{
	echo 'header = "Content-Type: application/json"'
	[ -n "$EMQ_API_KEY" ] && echo "header = \"Authorization: Bearer $EMQ_API_KEY\""
} >"$TMP/curlrc"

# new_id prints a random id in the form of a UUID, from the kernel when it
# offers one, else from /dev/urandom.
new_id() {
	cat /proc/sys/kernel/random/uuid 2>/dev/null ||
		od -An -tx1 -N16 /dev/urandom | tr -d ' \n' |
		sed 's/^\(.\{8\}\)\(.\{4\}\)\(.\{4\}\)\(.\{4\}\)/\1-\2-\3-\4-/'
}

# enqueue FILE POSTs the job in FILE and sets $status; the answer is in
# $TMP/body. On a 502, 503 or 504 answer, a connection error or a timeout it
# waits Retry-After seconds when the answer gives them (an HTTP date is not
# seconds), or else 0.5 s doubling, up to 30 s, and sends the job again.
# That is safe because the job has an id: if the first try was stored but
# its answer lost, the service answers the next with the job it has (200)
# instead of making another.
enqueue() {
	backoff_ms=500
	while :; do
		: >"$TMP/headers" # no Retry-After left over from the last try
		status=$(curl -sS -K "$TMP/curlrc" --max-time "$CALL_TIMEOUT_S" -o "$TMP/body" -D "$TMP/headers" \
			-w '%{http_code}' --data-binary "@$1" "$JOBS_URL" 2>"$TMP/err") || status=000
		case $status in
		000) why=$(head -n 1 "$TMP/err") ;;
		502 | 503 | 504) why=$status ;;
		*) return 0 ;;
		esac
		pause_ms=$(tr -d '\r' <"$TMP/headers" |
			sed -n 's/^[Rr][Ee][Tt][Rr][Yy]-[Aa][Ff][Tt][Ee][Rr]:[[:space:]]*0*\([0-9]\{1,6\}\)[[:space:]]*$/\1000/p' |
			head -n 1)
		[ "${pause_ms:-0}" -gt 0 ] || pause_ms=$backoff_ms
		[ "$pause_ms" -gt "$MAX_BACKOFF_MS" ] && pause_ms=$MAX_BACKOFF_MS
		pause=$(awk -v ms="$pause_ms" 'BEGIN { print ms / 1000 }')
		log "backing off ${pause}s: $why"
		sleep "$pause"
		backoff_ms=$((backoff_ms * 2))
		[ "$backoff_ms" -gt "$MAX_BACKOFF_MS" ] && backoff_ms=$MAX_BACKOFF_MS
	done
}

for payload in "$@"; do
	printf '%s' "$payload" | jq -c --arg id "$(new_id)" '{id: $id, payload: .}' >"$TMP/job"
	enqueue "$TMP/job"
	case $status in
	200 | 201) jq -r '"\(.id) \(.state)"' "$TMP/body" ;;
	*)
		log "enqueue refused: $status $(cat "$TMP/body")"
		exit 1
		;;
	esac
done
