#!/usr/bin/env bash
# Writes a large msMemScope-format recording for the monitor benchmarks (issue 3, issue 5):
# N/2 MALLOC and about N/2 FREE rows of one process, 1,024 blocks live, sizes 16 B-4 KiB,
# with the Timestamp index memtap's recordings have. Made by sqlite3 alone, so it does not
# depend on the code under test.
#   tests/bench/make_big_recording.sh OUT.db [EVENTS]   (EVENTS default 10,000,000)
set -euo pipefail
out=${1:?usage: make_big_recording.sh OUT.db [EVENTS]}
events=${2:-10000000}
rm -f "$out"
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
