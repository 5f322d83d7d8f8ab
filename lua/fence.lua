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
