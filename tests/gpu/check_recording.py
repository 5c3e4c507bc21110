"""Checks a recording of smoke_train.py against the figures PyTorch gave (tests/gpu/smoke.sh).

The HAL rows are what the process held from the CUDA driver. PyTorch's caching allocator
takes every segment from cudaMalloc (or, with expandable segments, maps them with cuMemMap),
so the peak of live HAL bytes of those calls on device 0 must be
torch.cuda.max_memory_reserved() within 1 %. Libraries also allocate beside the pool (on an
H200, cuBLAS took six cuMemAlloc_v2 blocks, 128 MiB): they count in the HAL peak but not in
torch's figure, so they are printed, not compared. Exits 1 on the first mismatch."""
import json
import sqlite3
import sys


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def main(db_path, figures_path):
    figures = json.load(open(figures_path))
    db = sqlite3.connect(db_path)
    table = "memscope_dump"
    rows = db.execute(
        f'SELECT Event, "Event Type", Name, "Device Id", Ptr, Attr FROM {table} '
        f'ORDER BY "Timestamp(ns)", ID'
    ).fetchall()
    pool_apis = {"cudaMalloc", "cuMemMap"}  # how the caching allocator gets its segments
    live, peak, hal_mallocs, devices, apis = {}, 0, 0, set(), set()
    total = 0
    all_live, all_total, all_peak = {}, 0, 0
    launches = 0
    nameless = 0
    ooms = []
    for event, etype, name, device, ptr, attr in rows:
        a = json.loads(attr) if attr and attr.startswith("{") else {}
        if etype == "HAL" and event == "MALLOC":
            hal_mallocs += 1
            devices.add(device)
            apis.add(name)
            if device == "0":
                all_live[ptr] = int(a.get("size", 0))
                all_total += all_live[ptr]
                all_peak = max(all_peak, all_total)
            if device == "0" and name in pool_apis:
                live[ptr] = int(a.get("size", 0))
                total += live[ptr]
                peak = max(peak, total)
        elif etype == "HAL" and event == "FREE":
            if ptr in all_live:
                all_total -= all_live.pop(ptr)
            if ptr in live:
                total -= live.pop(ptr)
        elif event == "KERNEL_LAUNCH":
            launches += 1
            nameless += name in ("", "N/A")
        elif event == "OOM_DETAIL" and etype == "OOM_TRIGGER":
            ooms.append((device, int(a.get("size", 0))))
    print(f"HAL mallocs {hal_mallocs} on devices {sorted(devices)} by {sorted(apis)}")
    print(f"kernel launches {launches} ({nameless} without a name); OOM rows {ooms}")
    reserved = figures["max_memory_reserved"]
    print(f"peak HAL on device 0 of {sorted(pool_apis)}: {peak} B; "
          f"torch.cuda.max_memory_reserved(): {reserved} B; every HAL block: {all_peak} B")
    if hal_mallocs == 0:
        fail("no HAL MALLOC rows")
    if devices != {"0"}:
        fail(f"HAL rows on devices {devices}, expected only '0'")
    if reserved <= 0 or abs(peak - reserved) > 0.01 * reserved:
        fail(f"peak HAL {peak} differs from max_memory_reserved {reserved} by more than 1 %")
    if launches == 0:
        fail("no KERNEL_LAUNCH rows")
    if nameless:
        fail(f"{nameless} kernel launches without a name")
    asked = figures["oom_bytes"]
    if "expandable_segments:True" in figures["alloc_conf"]:
        # Expandable segments grow page by page: the driver is asked for one page (20 MiB),
        # in cuMemCreate, and that is what runs out.
        if figures["oom"] and not any(d == "0" for d, _ in ooms):
            fail("no OOM_TRIGGER row for device 0")
    elif figures["oom"] and not any(d == "0" and asked <= s <= asked * 1.01 for d, s in ooms):
        # PyTorch rounds a request up (to 2 MiB) before it asks cudaMalloc.
        fail(f"no OOM_TRIGGER row for device 0 asking about {asked} B")
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
