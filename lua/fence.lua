-- fence.lua: the token fence on a holder's calls (docs/design.md#fencing).

-- OUTCOMES_KEPT is how many holders' reports a job remembers: a row's
-- outcomes field is " complete:<token> fail:<token> ", newest first, kept
-- across later claims, so that a holder repeating its report is answered
-- as the first time even when the job has moved on since (rule 5).
local OUTCOMES_KEPT = 8

-- outcomes_after is a row's outcomes field once the holder of token has
-- reported verb: old (the field as it was, or nil) with the report put
-- first and the oldest dropped beyond OUTCOMES_KEPT.
local function outcomes_after(old, verb, token)
  local kept, n = ' ' .. verb .. ':' .. token .. ' ', 1
  for entry in string.gmatch(old or '', '%S+') do
    if n >= OUTCOMES_KEPT then
      break
    end
    kept, n = kept .. entry .. ' ', n + 1
  end
  return kept
end

-- fence_row checks a holder's call on a row (a read_row table) under
-- token. It returns 'repeat' when the holder already reported verb under
-- this token (answer the job as it is, rule 5), or an error code: EMQGONE
-- when there is no such job (rule 4), EMQSTALE when token is not the
-- current one or the job is no longer active under it (rules 1-3); nil
-- when the call may go ahead.
local function fence_row(row, token, verb)
  if not row.state then
    return 'EMQGONE'
  end
  if verb and row.outcomes and string.find(row.outcomes, ' ' .. verb .. ':' .. token .. ' ', 1, true) then
    return 'repeat'
  end
  if row.token ~= token or row.state ~= 'active' then
    return 'EMQSTALE'
  end
  return nil
end

-- read_report reads the row of job id (declared) for its holder's report
-- (complete): a view of it when the row is plain, else the row as a
-- table (row.lua's read_row), the full path's. A plain row has none of
-- the fields whose jobs a report must tell others about (a group, flow
-- control, a batch, dependants, a dedupe key): its view holds what the
-- fence and the report need (state, token, outcomes, started_at), where
-- they are in flat, the row as HGETALL answered it, which the report
-- turns into its reply in place, and lean = true. No row table is built
-- for a plain job: that is most of what a report costs.
local function read_report(id)
  local flat = redis.call('HGETALL', job_key(id))
  local view = { lean = true, flat = flat, state = false, token = false, outcomes = false,
    started_at = false, at_state = false, at_lease = false, at_outcomes = false, at_result = false,
    at_finished = false }
  for i = 2, #flat, 2 do
    local field = flat[i - 1]
    if field == 'state' then view.state, view.at_state = flat[i], i
    elseif field == 'token' then view.token = flat[i]
    elseif field == 'started_at' then view.started_at = flat[i]
    elseif field == 'lease_expires_at' then view.at_lease = i
    elseif field == 'outcomes' then view.outcomes, view.at_outcomes = flat[i], i
    elseif field == 'result' then view.at_result = i
    elseif field == 'finished_at' then view.at_finished = i
    elseif field == 'group' or field == 'flow' or field == 'batch_id' or field == 'dependants'
      or field == 'dedupe_key' then
      return row_of(flat)
    end
  end
  return view
end
