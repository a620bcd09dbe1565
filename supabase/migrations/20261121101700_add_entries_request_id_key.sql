-- Captures are written at least once by the proxy (a batch whose commit acknowledgement was lost
-- is replayed from its spool), and stored exactly once: a capture's request_id is unique within
-- its ts (the partition key must be part of any unique index on entries).
create unique index entries_request_id_ts_key on public.entries (request_id, ts);
