#!/bin/sh
# An echo_mq worker in POSIX sh, with curl and jq.
#
# It claims jobs from one queue with a long poll, extends each job's lease on
# a timer (a background subshell) while the work runs, stops at a safe point
# when the job is cancelled, completes or fails the job (or snoozes it: work
# that cannot go ahead yet is put back for later, not failed), backs off when
# the service answers 502, 503, 504 or 429 or cannot be reached, and exits 0 on
# SIGTERM or SIGINT once the job in hand is done. A second signal exits at
# once (143 or 130), leaving the job to its lease.
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

# How long a call may take before it counts as a connection error (a claim
# waits up to EMQ_WAIT_MS for a job, so it gets that much more; an extend at
# most the third of the lease until the next is due), and the longest pause
# between two tries of a call (for an extend, that same third).
CALL_TIMEOUT_MS=30000
EXTEND_EVERY_MS=$((EMQ_LEASE_MS / 3))
EXTEND_TIMEOUT_MS=$EXTEND_EVERY_MS
[ "$EXTEND_TIMEOUT_MS" -gt "$CALL_TIMEOUT_MS" ] && EXTEND_TIMEOUT_MS=$CALL_TIMEOUT_MS
MAX_BACKOFF_MS=30000

log() { printf '%s\n' "$*" >&2; }

for tool in curl jq; do
	command -v "$tool" >/dev/null 2>&1 || { log "$tool is missing: install it (apt-get install -y $tool)"; exit 1; }
done

# ---------------------------------------------------------------------------
# Your work goes here.
# ---------------------------------------------------------------------------

# handle PAYLOAD does the job's work. On success it sets RESULT to the
# result (one JSON value) and returns 0. On failure it sets ERROR to the
# error text and returns 1: the service retries the job with backoff. When
# the work cannot go ahead yet it sets DELAY_MS to how long to wait and
# returns 3: the job is snoozed, put back for DELAY_MS without spending its
# attempt. At every safe point it asks should_stop and returns 2 when that
# says stop: the job was cancelled or is no longer ours.
#
# The example: the payload {"ms": N} works for N milliseconds (default 100)
# in steps of at most 100 ms, each step a safe point; {"fail": "text"} fails
# with that text once it has worked; {"not_before": <Unix ms>} snoozes the
# job until then when it comes earlier (jq's now tells the time).
handle() {
	{ read -r ms; read -r fails; read -r wait_ms; } <<EOF
$(printf '%s' "$1" | jq -r 'if type == "object" then (.ms // 100 | floor), has("fail"),
	((.not_before // 0) - (now * 1000 | floor) | if . > 0 then ceil else 0 end) else 100, false, 0 end')
EOF
	if [ "$wait_ms" -gt 0 ]; then
		DELAY_MS=$wait_ms
		return 3
	fi
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

# The fixed times in seconds, worked out once: each $(seconds ...) starts a
# process, which a busy machine makes slow.
EXTEND_EVERY_S=$(seconds "$EXTEND_EVERY_MS")
CLAIM_MAX_TIME_S=$(seconds $((CALL_TIMEOUT_MS + EMQ_WAIT_MS)))
EXTEND_MAX_TIME_S=$(seconds "$EXTEND_TIMEOUT_MS")
CALL_MAX_TIME_S=$(seconds "$CALL_TIMEOUT_MS")

# nap SECONDS sleeps in the background and waits for it, so that a signal
# the shell traps ends the nap at once instead of when the sleep is over.
nap() {
	sleep "$1" &
	nap_pid=$!
	await "$nap_pid"
}

# await PID waits for a background sleep to end; when a signal cuts the
# wait short, it ends the sleep too.
await() {
	if ! wait "$1"; then
		kill "$1" 2>/dev/null
		wait "$1" 2>/dev/null
	fi
}

# post NAME PATH BODY [until-stopped] POSTs BODY to the queue's PATH, sets
# $status to the HTTP status and leaves the answer in $TMP/NAME.body. BODY
# is JSON text, or @FILE for a file that holds it (as curl reads it).
#
# On a 502, 503, 504 or 429 answer (for a claim, any 5xx: a claim changes
# nothing until it is answered), a connection error or a timeout, it waits
# Retry-After seconds when the answer gives them, or else 0.5 s doubling, at
# most 30 s (an extend: a third of the lease), and sends the same request
# again. Sending a complete, a fail or a snooze again is safe: the service
# answers a repeat as the first time. With until-stopped it gives up, returning 1,
# once told to stop.
post() {
	case $1 in
	claim) max_time_s=$CLAIM_MAX_TIME_S max_pause_ms=$MAX_BACKOFF_MS ;;
	extend) max_time_s=$EXTEND_MAX_TIME_S max_pause_ms=$EXTEND_EVERY_MS ;;
	*) max_time_s=$CALL_MAX_TIME_S max_pause_ms=$MAX_BACKOFF_MS ;;
	esac
	until_stopped=${4:-}
	backoff_ms=500
	while :; do
		: >"$TMP/$1.headers" # no Retry-After left over from the last try
		status=$(curl -sS -K "$TMP/curlrc" --max-time "$max_time_s" \
			-o "$TMP/$1.body" -D "$TMP/$1.headers" -w '%{http_code}' \
			--data-binary "$3" "$QUEUE_URL$2" 2>"$TMP/$1.err") || status=000
		case $1:$status in
		*:000)
			pause_ms=$backoff_ms
			why=$(head -n 1 "$TMP/$1.err")
			;;
		*:429 | *:502 | *:503 | *:504 | claim:5??)
			pause_ms=$(retry_after_ms "$1")
			[ "${pause_ms:-0}" -gt 0 ] || pause_ms=$backoff_ms
			why="$status $(jq -r '.code // empty' "$TMP/$1.body" 2>/dev/null)"
			;;
		*) return 0 ;;
		esac
		[ "$pause_ms" -gt "$max_pause_ms" ] && pause_ms=$max_pause_ms
		[ -n "$until_stopped" ] && told_to_stop && return 1
		pause_s=$(seconds "$pause_ms")
		log "backing off ${pause_s}s: $why"
		nap "$pause_s"
		[ -n "$until_stopped" ] && told_to_stop && return 1
		backoff_ms=$((backoff_ms * 2))
		[ "$backoff_ms" -gt "$MAX_BACKOFF_MS" ] && backoff_ms=$MAX_BACKOFF_MS
	done
}

# retry_after_ms NAME prints the Retry-After of the answer in milliseconds,
# or nothing when it has none. Only seconds count (at most six digits, so
# the arithmetic cannot overflow): an HTTP date is not a number of seconds.
retry_after_ms() {
	ra=$(tr -d '\r' <"$TMP/$1.headers" |
		sed -n 's/^[Rr][Ee][Tt][Rr][Yy]-[Aa][Ff][Tt][Ee][Rr]:[[:space:]]*0*\([0-9]\{1,6\}\)[[:space:]]*$/\1/p' |
		head -n 1)
	[ -n "$ra" ] && echo $((ra * 1000))
}

# told_to_stop reports whether a signal came (it sets $stopping) or, in the
# extender, the worker is gone ($$ is the worker's process in both).
told_to_stop() { [ -n "$stopping" ] || ! kill -0 $$ 2>/dev/null; }

# refusal NAME says what a refused call's answer was, for a log line or a
# job's error: "413 EMQTOOLARGE: <detail>" (just the status when the answer
# is not a problem).
refusal() {
	text=$(jq -r --arg s "$status" '"\($s)\(if .code then " \(.code)" else "" end): \(.detail // "")"' \
		"$TMP/$1.body" 2>/dev/null)
	printf '%s\n' "${text:-$status}"
}

# ---------------------------------------------------------------------------
# The checkpoint: a background subshell extends the lease while the work runs.
# ---------------------------------------------------------------------------

# extend_every ID TOKEN extends the job's lease every EMQ_LEASE_MS / 3 until
# it gets SIGTERM, or finds the worker gone (killed: then the lease lapses
# and the service gives the job to another worker). When the answer says
# the job was cancelled it writes "cancelled: <reason>" to the stop file and
# goes on extending until the work has stopped, so that the job is not swept
# as stalled meanwhile. On a 409 EMQSTALE or 404 EMQGONE (the job is no
# longer ours) it writes "lost" and ends.
#
# The next extend's timer starts as an extend is sent, not once it is
# answered: the extends stay a third of the lease apart however long each
# takes (a slow answer, a busy machine), rather than drifting later by that
# much each time.
extend_every() {
	stopping=
	trap 'stopping=1' TERM
	sleep "$EXTEND_EVERY_S" &
	tick=$!
	extend_on_time "$1" "$2"
	if [ -n "$tick" ]; then # the timer of an extend that will not be sent
		kill "$tick" 2>/dev/null
		wait "$tick" 2>/dev/null
	fi
}

# extend_on_time ID TOKEN is extend_every's loop: it extends each time the
# timer $tick ends.
extend_on_time() {
	cancelled=
	while ! told_to_stop; do
		await "$tick"
		tick=
		told_to_stop && return
		sleep "$EXTEND_EVERY_S" &
		tick=$!
		post extend "/jobs/$1/lease" "{\"token\": $2, \"lease_ms\": $EMQ_LEASE_MS}" until-stopped || return
		case $status in
		200)
			cancel=$(jq -r 'select(.cancel_requested) | "cancelled: \(.cancel_reason // "")"' "$TMP/extend.body")
			if [ -n "$cancel" ] && [ -z "$cancelled" ]; then
				stop_with "$cancel"
				cancelled=1
			fi
			;;
		404 | 409)
			stop_with lost
			return
			;;
		*) log "extend $1 refused: $(refusal extend)" ;;
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
	[ ! -e "$TMP/stop" ] || rm -f "$TMP/stop"
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
	RESULT=null ERROR= DELAY_MS=0
	start_checkpoint "$id" "$token"
	handle "$payload"
	outcome=$?
	stop_checkpoint
	stop=
	[ -e "$TMP/stop" ] && read -r stop <"$TMP/stop"

	case $stop:$outcome in
	lost:*) log "lost $id" ;;       # someone else holds it now, or it was removed: report nothing
	*:0) complete_job "$id" "$token" ;; # also when a cancel came too late to stop it
	cancelled:*) fail_job "$id" "$token" "$stop" "cancelled $id: ${stop#cancelled: }" ;;
	*:3) snooze_job "$id" "$token" "$DELAY_MS" ;; # not a failure: the job comes back later
	*)
		ERROR=${ERROR:-stopped}
		fail_job "$id" "$token" "$ERROR" "failed $id: $ERROR"
		;;
	esac
}

# complete_job ID TOKEN completes the job with RESULT. A RESULT that is not one
# JSON value fails the job, and so does a result the service refuses (400
# not valid, 413 too large): the job must not stay active until its lease
# lapses. The body goes through a file: a result can be larger than a
# command line may be.
complete_job() {
	if ! printf '%s' "$RESULT" | jq -cs --argjson t "$2" \
		'if length == 1 then {token: $t, result: .[0]} else error("\(length) JSON values") end' \
		>"$TMP/complete.json" 2>"$TMP/complete.err"; then
		refused="the result is not one JSON value: $(head -n 1 "$TMP/complete.err")"
		fail_job "$1" "$2" "$refused" "failed $1: $refused"
		return
	fi
	post report "/jobs/$1/complete" "@$TMP/complete.json"
	case $status in
	200) log "completed $1" ;;
	404 | 409) log "lost $1" ;;
	*)
		refused="result refused: $(refusal report)"
		fail_job "$1" "$2" "$refused" "failed $1: $refused"
		;;
	esac
}

# snooze_job ID TOKEN DELAY_MS puts the job back for DELAY_MS without
# spending its attempt; a job whose cancel was requested is cancelled
# instead. A snooze the service refuses (400: a delay over a year) fails the
# job, so that it does not stay active until its lease lapses.
snooze_job() {
	post report "/jobs/$1/snooze" "{\"token\": $2, \"delay_ms\": $3}"
	case $status in
	200)
		if [ "$(jq -r '.state' "$TMP/report.body")" = cancelled ]; then
			log "cancelled $1: $(jq -r '.cancel_reason // ""' "$TMP/report.body")"
		else
			log "snoozed $1: $3 ms"
		fi
		;;
	404 | 409) log "lost $1" ;;
	*)
		refused="snooze refused: $(refusal report)"
		fail_job "$1" "$2" "$refused" "failed $1: $refused"
		;;
	esac
}

# fail_job ID TOKEN ERROR LINE fails the job with the ERROR text and logs LINE.
fail_job() {
	jq -cn --argjson t "$2" --arg e "$3" '{token: $t, error: $e}' >"$TMP/fail.json"
	post report "/jobs/$1/fail" "@$TMP/fail.json"
	case $status in
	200) log "$4" ;;
	404 | 409) log "lost $1" ;;
	*) log "fail $1 refused: $(refusal report)" ;;
	esac
}

# claim asks for one job, waiting up to EMQ_WAIT_MS, and writes it to
# $TMP/job; the file is empty when none came. It returns 1 when a signal
# came while it backed off.
claim() {
	post claim /claim "$claim_body" until-stopped || return 1
	if [ "$status" != 200 ]; then # a wrong key, queue name or setting: asking again will not help
		log "claim refused: $(refusal claim)"
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

# on_signal NAME CODE: a first SIGTERM or SIGINT lets the loop stop once
# the job in hand is done; a second one exits at once with CODE (143 or
# 130), as soon as the command running (a work step, a call) ends.
# Unreported, the job goes back to the queue when its lease lapses.
# shellcheck disable=SC2317
on_signal() {
	if [ -n "$stopping" ]; then
		log "stopped at once (a second $1)"
		exit "$2"
	fi
	stopping=1
	log stopping
}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/emq-worker.XXXXXX") || exit 1
extender=
stopping=
trap cleanup EXIT
trap 'on_signal SIGTERM 143' TERM
trap 'on_signal SIGINT 130' INT

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
