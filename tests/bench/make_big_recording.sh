#!/usr/bin/env bash
# Writes a large msMemScope-format recording for the monitor benchmarks (issue 3, issue 5):
# N/2 MALLOC and about N/2 FREE rows of one process, 1,024 blocks live, sizes 16 B-4 KiB,
# with the Timestamp index memtap's recordings have. Made by sqlite3 alone, so it does not
# depend on the code under test.
#   tests/bench/make_big_recording.sh [--compact] OUT.db [EVENTS]   (EVENTS default 10,000,000)
# --compact: the same rows as MemscopeWriterOptions::compact writes them (compact_schema.h):
# integers in memtap_event, memtap_format's timestamp base, memtap_thread, a
# memtap_event_chunk row every 4,096 IDs, and memscope_dump as the writer's view.
set -euo pipefail
compact=0
if [ "${1:-}" = --compact ]; then
  compact=1
  shift
fi
out=${1:?usage: make_big_recording.sh [--compact] OUT.db [EVENTS]}
events=${2:-10000000}
rm -f "$out"
if [ "$compact" = 1 ]; then
  sqlite3 "$out" >/dev/null <<SQL
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
CREATE TABLE memtap_format (version INTEGER, timestamp_base_ns INTEGER);
INSERT INTO memtap_format VALUES (1, 1700000000000000000);
CREATE TABLE memtap_event (ID INTEGER PRIMARY KEY, event INTEGER, event_type INTEGER,
  timestamp_offset_ns INTEGER, thread INTEGER, ptr INTEGER, size_bytes INTEGER,
  allocation_id INTEGER, name INTEGER, owner INTEGER, stack_python INTEGER, stack_c INTEGER,
  detail INTEGER);
CREATE TABLE memtap_thread (thread INTEGER PRIMARY KEY, process_id INTEGER, thread_id INTEGER);
CREATE TABLE memtap_string (id INTEGER PRIMARY KEY, text TEXT);
CREATE TABLE memtap_event_chunk (first_id INTEGER PRIMARY KEY, min_timestamp_offset_ns INTEGER);
INSERT INTO memtap_thread VALUES (0, 7, 7);
-- The rows below, as integers: event 0 MALLOC / 1 FREE, event_type 0 HOST, thread 0;
-- unused columns 0, as the writer binds them.
WITH RECURSIVE r(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM r WHERE n + 1 < $events),
b(n, k) AS (SELECT n, CASE WHEN n % 2 = 0 THEN n / 2 ELSE (n - 1) / 2 - 1023 END FROM r)
INSERT INTO memtap_event
SELECT n, n % 2, 0, n * 100, 0, 65536 + (k % 1024) * 8192,
       16 + ((k * 1103515245 + 12345) / 65536) % 4080, k + 1, 0, 0, 0, 0, 0
FROM b WHERE k >= 0;
INSERT INTO memtap_event_chunk
SELECT ID - ID % 4096, min(timestamp_offset_ns) FROM memtap_event GROUP BY ID / 4096;
-- The view as compact_schema.cpp writes it (memtap reads the tables, not the view).
CREATE VIEW "memscope_dump" AS SELECT e.ID AS "ID",
  CASE e.event WHEN 0 THEN 'MALLOC' WHEN 1 THEN 'FREE' WHEN 2 THEN 'SYSTEM' WHEN 3 THEN 'SNAPSHOT' WHEN 4 THEN 'MSTX' WHEN 5 THEN 'OP_LAUNCH' ELSE 'N/A' END AS "Event",
  CASE e.event_type WHEN 0 THEN 'HOST' WHEN 1 THEN 'START_TRACE' WHEN 2 THEN 'STOP_TRACE' WHEN 3 THEN 'SNAPSHOT' WHEN 4 THEN 'STEP' WHEN 5 THEN 'Mark' WHEN 6 THEN 'Range_start' WHEN 7 THEN 'Range_end' WHEN 8 THEN 'ATEN_START' WHEN 9 THEN 'ATEN_END' ELSE 'N/A' END AS "Event Type",
  CASE WHEN e.event = 2 AND e.event_type = 4 THEN CAST(e.detail AS TEXT) ELSE COALESCE(NULLIF((SELECT text FROM memtap_string WHERE id = e.name), ''), 'N/A') END AS "Name",
  e.timestamp_offset_ns + (SELECT timestamp_base_ns FROM memtap_format) AS "Timestamp(ns)",
  (SELECT process_id FROM memtap_thread WHERE thread = e.thread) AS "Process Id",
  (SELECT thread_id FROM memtap_thread WHERE thread = e.thread) AS "Thread Id",
  CASE WHEN e.event IN (0, 1, 3) THEN 'cpu' ELSE 'N/A' END AS "Device Id",
  CASE WHEN e.event IN (0, 1) THEN printf('0x%016x', e.ptr) ELSE 'N/A' END AS "Ptr",
  CASE WHEN e.event IN (0, 1) THEN '{"allocation_id":"' || e.allocation_id || '","addr":"' || printf('0x%016x', e.ptr) || '","size":"' || e.size_bytes || '"' || COALESCE((SELECT ',"owner":' || json_quote(text) FROM memtap_string WHERE id = e.owner AND text <> ''), '') || CASE WHEN e.detail & 1 THEN ',"kind":"mmap"' ELSE '' END || CASE WHEN e.detail >> 1 THEN ',"inherited_from":"' || (e.detail >> 1) || '"' ELSE '' END || '}' WHEN e.event = 3 THEN '{"app_reserved":"' || e.size_bytes || '"' || CASE WHEN e.detail THEN ',"total":"' || e.detail || '"' ELSE '' END || '}' ELSE '' END AS "Attr",
  COALESCE((SELECT text FROM memtap_string WHERE id = e.stack_python), '') AS "Call Stack(Python)",
  COALESCE((SELECT text FROM memtap_string WHERE id = e.stack_c), '') AS "Call Stack(C)"
  FROM memtap_event AS e;
SQL
  echo "$out: $(sqlite3 "$out" 'SELECT count(*) FROM memtap_event') rows (compact)"
  exit 0
fi
sqlite3 "$out" >/dev/null <<SQL
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
CREATE TABLE memscope_dump ("ID" INTEGER PRIMARY KEY, "Event" TEXT, "Event Type" TEXT,
  "Name" TEXT, "Timestamp(ns)" INTEGER, "Process Id" INTEGER, "Thread Id" INTEGER,
  "Device Id" TEXT, "Ptr" TEXT, "Attr" TEXT, "Call Stack(Python)" TEXT, "Call Stack(C)" TEXT);
-- Row n: even n allocates block k = n/2 in slot k % 1024; odd n frees the block
-- allocated 1,024 blocks earlier (k = (n-1)/2 - 1023), so 1,024 stay live.
WITH RECURSIVE r(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM r WHERE n + 1 < $events),
b(n, k) AS (SELECT n, CASE WHEN n % 2 = 0 THEN n / 2 ELSE (n - 1) / 2 - 1023 END FROM r)
INSERT INTO memscope_dump
SELECT n, CASE WHEN n % 2 = 0 THEN 'MALLOC' ELSE 'FREE' END, 'HOST', 'N/A',
       1700000000000000000 + n * 100, 7, 7, 'cpu',
       printf('0x%016x', 65536 + (k % 1024) * 8192),
       printf('{"allocation_id":"%d","addr":"0x%016x","size":"%d"}', k + 1,
              65536 + (k % 1024) * 8192, 16 + ((k * 1103515245 + 12345) / 65536) % 4080),
       '', ''
FROM b WHERE k >= 0;
CREATE INDEX idx_ts ON memscope_dump("Timestamp(ns)");
SQL
echo "$out: $(sqlite3 "$out" 'SELECT count(*) FROM memscope_dump') rows"
