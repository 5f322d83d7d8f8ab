#!/bin/sh
# An echo_mq worker in POSIX sh, with curl and jq.
#
# It claims jobs from one queue with a long poll, extends each job's lease on
# a timer (a background subshell) while the work runs, stops at a safe point
# when the job is cancelled, completes or fails the job, backs off when the
# service answers 503 or cannot be reached, and exits 0 on SIGTERM or SIGINT
# once the job in hand is done.
#
# Put your own work in handle() below; the rest is the loop every echo_mq
# worker runs (see examples/README.md). Run it with:
#
#     EMQ_URL=http://127.0.0.1:8080 EMQ_QUEUE=jobs sh worker.sh
#
# Fractional sleeps (sleep 0.1) need a sleep that takes them: GNU, BusyBox
# and the BSDs' do.

set -u

EMQ_URL=${EMQ_URL:-http://127.0.0.1:8080}
EMQ_QUEUE=${EMQ_QUEUE:-jobs}
EMQ_API_KEY=${EMQ_API_KEY:-}
EMQ_LEASE_MS=${EMQ_LEASE_MS:-30000}
EMQ_WAIT_MS=${EMQ_WAIT_MS:-10000}
EMQ_WORKER=${EMQ_WORKER:-shell-$(uname -n)-$$}

QUEUE_URL="${EMQ_URL%/}/queues/$EMQ_QUEUE"
CALL_TIMEOUT_S=30 # a call that takes longer counts as a connection error

log() { printf '%s\n' "$*" >&2; }

for tool in curl jq; do
	command -v "$tool" >/dev/null 2>&1 || { log "$tool is missing: install it (apt-get install -y $tool)"; exit 1; }
done

# ---------------------------------------------------------------------------
# Your work goes here.
# ---------------------------------------------------------------------------

# handle PAYLOAD does the job's work. On success it sets RESULT to the
# result (JSON) and returns 0. On failure it sets ERROR to the error text and
# returns 1: the service retries the job with backoff. At every safe point
# it asks should_stop and returns 2 when that says stop: the job was
# cancelled or is no longer ours.
#
# The example: the payload {"ms": N} works for N milliseconds (default 100)
# in steps of at most 100 ms, each step a safe point; {"fail": "text"} fails
# with that text once it has worked.
handle() {
	{ read -r ms; read -r fails; } <<EOF
$(printf '%s' "$1" | jq -r 'if type == "object" then (.ms // 100 | floor), has("fail") else 100, false end')
EOF
	worked=0
	while [ "$worked" -lt "$ms" ]; do
		should_stop && return 2
		step=$((ms - worked))
		[ "$step" -gt 100 ] && step=100
		sleep "$(seconds "$step")"
		worked=$((worked + step))
	done
	if [ "$fails" = true ]; then
		ERROR=$(printf '%s' "$1" | jq -r '.fail | tostring')
		return 1
	fi
	RESULT="{\"worked_ms\": $worked, \"by\": \"shell\"}"
	return 0
}

# ---------------------------------------------------------------------------
# Talking to the service.
# ---------------------------------------------------------------------------

# seconds MS prints MS milliseconds as seconds: 500 -> 0.5, 2000 -> 2.
seconds() {
	s=$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))
	s=${s%0}; s=${s%0}; s=${s%0} # 2.000 -> 2.
	printf '%s\n' "${s%.}"
}

# nap SECONDS sleeps in the background and waits for it, so that a signal
# the shell traps ends the nap at once instead of when the sleep is over.
nap() {
	sleep "$1" &
	nap_pid=$!
	if ! wait "$nap_pid"; then # a signal cut the wait short: end the sleep too
		kill "$nap_pid" 2>/dev/null
		wait "$nap_pid" 2>/dev/null
	fi
}

# post NAME PATH BODY [until-stopped] POSTs the JSON BODY to the queue's
# PATH, sets $status to the HTTP status and leaves the answer in
# $TMP/NAME.body.
#
# On 503 (EMQUNAVAILABLE, EMQBUSY) it waits Retry-After seconds, or 0.5 s
# doubling up to 30 s when there is none, and sends the same request again;
# on a connection error likewise. Sending a complete or a fail again is
# safe: the service answers a repeat as the first time. With until-stopped
# it gives up, returning 1, once told to stop.
post() {
	max_time=$CALL_TIMEOUT_S
	[ "$2" = /claim ] && max_time=$((CALL_TIMEOUT_S + EMQ_WAIT_MS / 1000)) # a claim waits for a job
	until_stopped=${4:-}
	backoff_ms=500
	while :; do
		status=$(curl -sS -K "$TMP/curlrc" --max-time "$max_time" \
			-o "$TMP/$1.body" -D "$TMP/$1.headers" -w '%{http_code}' \
			--data-binary "$3" "$QUEUE_URL$2" 2>"$TMP/$1.err") || status=000
		case $status in
		503)
			pause_ms=$(grep -i '^retry-after:' "$TMP/$1.headers" | tr -cd '0-9')
			pause_ms=$((${pause_ms:-0} * 1000))
			[ "$pause_ms" -gt 0 ] || pause_ms=$backoff_ms
			why="503 $(jq -r '.code // empty' "$TMP/$1.body" 2>/dev/null)"
			;;
		000)
			pause_ms=$backoff_ms
			why=$(head -n 1 "$TMP/$1.err")
			;;
		*) return 0 ;;
		esac
		[ -n "$until_stopped" ] && told_to_stop && return 1
		log "backing off $(seconds "$pause_ms")s: $why"
		nap "$(seconds "$pause_ms")"
		[ -n "$until_stopped" ] && told_to_stop && return 1
		backoff_ms=$((backoff_ms * 2))
		[ "$backoff_ms" -gt 30000 ] && backoff_ms=30000
	done
}

# told_to_stop reports whether a signal came (it sets $stopping) or, in the
# extender, the worker is gone ($$ is the worker's process in both).
told_to_stop() { [ -n "$stopping" ] || ! kill -0 $$ 2>/dev/null; }

# detail NAME prints the detail of a problem answer, for a log line.
detail() { jq -r '.detail // empty' "$TMP/$1.body" 2>/dev/null; }

# ---------------------------------------------------------------------------
# The checkpoint: a background subshell extends the lease while the work runs.
# ---------------------------------------------------------------------------

# extend_every ID TOKEN extends the job's lease every EMQ_LEASE_MS / 3 until
# it gets SIGTERM, or finds the worker gone (killed: then the lease lapses
# and the service gives the job to another worker). When the answer says
# the job was cancelled it writes "cancelled: <reason>" to the stop file,
# and "lost" on a 409 EMQSTALE or 404 EMQGONE (the job is no longer ours);
# then it ends.
extend_every() {
	stopping=
	trap 'stopping=1' TERM
	every=$(seconds $((EMQ_LEASE_MS / 3)))
	while :; do
		nap "$every"
		told_to_stop && return
		post extend "/jobs/$1/lease" "{\"token\": $2, \"lease_ms\": $EMQ_LEASE_MS}" until-stopped || return
		case $status in
		200)
			cancel=$(jq -r 'select(.cancel_requested) | "cancelled: \(.cancel_reason // "")"' "$TMP/extend.body")
			if [ -n "$cancel" ]; then
				stop_with "$cancel"
				return
			fi
			;;
		404 | 409)
			stop_with lost
			return
			;;
		*) log "extend $1 refused: $status $(detail extend)" ;;
		esac
	done
}

# stop_with TEXT writes the stop file whole, so the work never reads half of it.
stop_with() {
	printf '%s\n' "$1" >"$TMP/stop.new"
	mv "$TMP/stop.new" "$TMP/stop"
}

# should_stop reports whether the checkpoint wrote the stop file.
should_stop() { [ -e "$TMP/stop" ]; }

# start_checkpoint ID TOKEN starts the extender; stop_checkpoint ends it
# and waits until it is gone.
start_checkpoint() {
	rm -f "$TMP/stop"
	extend_every "$1" "$2" &
	extender=$!
}

stop_checkpoint() {
	[ -n "$extender" ] || return 0
	kill "$extender" 2>/dev/null
	while kill -0 "$extender" 2>/dev/null; do # again if a signal cut the wait short
		wait "$extender" 2>/dev/null
	done
	extender=
}

# ---------------------------------------------------------------------------
# The loop.
# ---------------------------------------------------------------------------

# work runs handle on the job claim wrote to $TMP/job (its id, token and
# payload, a line each) and reports how it ended.
work() {
	{ read -r id; read -r token; read -r payload; } <"$TMP/job"
	log "claimed $id"
	RESULT=null ERROR=
	start_checkpoint "$id" "$token"
	handle "$payload"
	outcome=$?
	stop_checkpoint
	stop=$(cat "$TMP/stop" 2>/dev/null)

	case $outcome:$stop in
	*:lost) log "lost $id" ;; # someone else holds it now: report nothing
	2:cancelled:*)
		report "$id" fail "$(jq -cn --argjson t "$token" --arg e "$stop" '{token: $t, error: $e}')" \
			"cancelled $id: ${stop#cancelled: }"
		;;
	0:*) report "$id" complete "{\"token\": $token, \"result\": $RESULT}" "completed $id" ;;
	*)
		ERROR=${ERROR:-stopped}
		report "$id" fail "$(jq -cn --argjson t "$token" --arg e "$ERROR" '{token: $t, error: $e}')" \
			"failed $id: $ERROR"
		;;
	esac
}

# report ID VERB BODY LINE completes or fails the job and logs LINE.
report() {
	post report "/jobs/$1/$2" "$3"
	case $status in
	200) log "$4" ;;
	404 | 409) log "lost $1" ;;
	*) log "$2 $1 refused: $status $(detail report)" ;;
	esac
}

# claim asks for one job, waiting up to EMQ_WAIT_MS, and writes it to
# $TMP/job; the file is empty when none came. It returns 1 when a signal
# came while it backed off.
claim() {
	post claim /claim "$claim_body" until-stopped || return 1
	if [ "$status" != 200 ]; then # a wrong key, queue name or setting: asking again will not help
		log "claim refused: $status $(detail claim)"
		exit 1
	fi
	jq -r '.jobs[0] // empty | .id, .token, (.payload | tojson)' "$TMP/claim.body" >"$TMP/job"
}

# cleanup ends the extender and removes the temporary files, however the
# worker exits (the EXIT trap runs it).
# shellcheck disable=SC2317
cleanup() {
	stop_checkpoint
	rm -rf "$TMP"
}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/emq-worker.XXXXXX") || exit 1
extender=
stopping=
trap cleanup EXIT
trap 'stopping=1; log stopping' TERM INT

# The key goes in a curl config file, not on the command line where any user
# of the machine could read it in ps.
{
	echo 'header = "Content-Type: application/json"'
	[ -n "$EMQ_API_KEY" ] && echo "header = \"Authorization: Bearer $EMQ_API_KEY\""
} >"$TMP/curlrc"

claim_body=$(jq -cn --argjson lease "$EMQ_LEASE_MS" --argjson wait "$EMQ_WAIT_MS" --arg worker "$EMQ_WORKER" \
	'{lease_ms: $lease, wait_ms: $wait, worker: $worker}')

# A signal does not cut a long poll short: a job it brings is worked.
while [ -z "$stopping" ] && claim; do
	[ -s "$TMP/job" ] && work # an empty file: nothing came, ask again
done
log stopped
exit 0
