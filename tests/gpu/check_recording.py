"""Checks a recording of smoke_train.py against the figures PyTorch gave (tests/gpu/smoke.sh).

The HAL rows are what the process held from the CUDA driver. PyTorch's caching allocator
takes every segment from cudaMalloc (or, with expandable segments, maps them with cuMemMap),
so the peak of live HAL bytes of those calls on device 0 must be
torch.cuda.max_memory_reserved() within 1 %. Libraries also allocate beside the pool (on an
H200, cuBLAS took six cuMemAlloc_v2 blocks, 128 MiB): they count in the HAL peak but not in
torch's figure, so they are printed, not compared.

The PTA rows are the allocator's blocks as its trace tracker reported them (memtap.torch):
their sizes are the sizes asked for, so the peak of live PTA bytes must be the allocator's
requested_bytes peak within 1 %, their largest Attr total max_memory_reserved(), the
"batch" owner must label some of them, and the block freed while a second stream used it
must have a pending FREE and a FREE_COMPLETED row. Exits 1 on the first mismatch."""
import json
import sqlite3
import sys


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def show_compiler_output(reason):
    """The end of the tracker compiler's output, when the reason names it: on a machine lent
    for minutes, one run must say why."""
    import re

    found = re.search(r"(/\S+\.log)", reason)
    if not found:
        return
    try:
        lines = open(found.group(1), errors="replace").read().splitlines()
    except OSError as err:
        print(f"(cannot read {found.group(1)}: {err})")
        return
    print(f"--- {found.group(1)}, last {min(len(lines), 40)} of {len(lines)} lines:")
    for line in lines[-40:]:
        print(line)
    print("---")


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
    pta_live, pta_total, pta_peak, pta_mallocs, pta_reserved = {}, 0, 0, 0, 0
    pta_owners, pending, completed = set(), 0, 0
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
        elif etype == "PTA" and device == "0" and event == "MALLOC":
            pta_mallocs += 1
            pta_live[ptr] = int(a.get("size", 0))
            pta_total += pta_live[ptr]
            pta_peak = max(pta_peak, pta_total)
            pta_reserved = max(pta_reserved, int(a.get("total", 0)))
            pta_owners.add(a.get("owner", ""))
        elif etype == "PTA" and device == "0" and event == "FREE":
            pta_total -= pta_live.pop(ptr, 0)
            pending += a.get("pending") == "1"
        elif etype == "PTA" and event == "FREE_COMPLETED":
            completed += 1
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
    print(f"pool: {figures['pool_mode']} ({figures['pool_reason']}); PTA mallocs {pta_mallocs}, "
          f"peak {pta_peak} B against requested_bytes peak {figures['max_requested']} B; "
          f"largest total {pta_reserved} B; owners {sorted(pta_owners)}; "
          f"pending frees {pending}, completions {completed}")
    if figures["pool_mode"] != "tracker":
        show_compiler_output(str(figures["pool_reason"]))
        fail("PyTorch's pool was not watched with its trace tracker: " + str(figures["pool_reason"]))
    requested = figures["max_requested"]
    if pta_mallocs == 0:
        fail("no PTA MALLOC rows")
    if requested <= 0 or abs(pta_peak - requested) > 0.01 * requested:
        fail(f"peak PTA {pta_peak} differs from requested_bytes peak {requested} by more than 1 %")
    if abs(pta_reserved - reserved) > 0.01 * reserved:
        fail(f"largest PTA total {pta_reserved} differs from max_memory_reserved {reserved}")
    if "batch" not in pta_owners:
        fail("no PTA block carries the owner 'batch'")
    if pending == 0 or completed == 0:
        fail("the block freed while a second stream used it has no pending FREE and completion")
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
