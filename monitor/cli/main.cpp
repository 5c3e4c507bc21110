// memtap: the command-line front end. Subcommands dispatch to commands.h.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "monitor/cli/commands.h"
#include "monitor/cli/gui_launch.h"

namespace {

void usage(FILE* out) {
  fprintf(out,
          "usage: memtap <command> [options]\n"
          "\n"
          "  memtap run [-o out.db] [--compact] [--connect ENDPOINT] [--keys DIR]\n"
          "             [--stacks python,c] [--stack-min-size SIZE] [--torch-ops]\n"
          "             [--no-torch-pool] [--max-processes N] -- PROGRAM [ARGS...]\n"
          "      run PROGRAM with the agent preloaded and record its memory events\n"
          "      (default output: ./memscope_dump_<YYYYmmddHHMMSS>.db); exits with\n"
          "      PROGRAM's exit code. `import memtap` works in Python programs it runs.\n"
          "      --stacks: call stacks (Python, C or both) on allocations of at least\n"
          "      --stack-min-size (bytes, or with KiB/MiB/GiB: 1MiB); --torch-ops: PyTorch\n"
          "      operators as OP_LAUNCH events, naming the memory they allocate;\n"
          "      --no-torch-pool: leave PyTorch's CUDA caching allocator unwatched (by\n"
          "      default its blocks are the PTA layer; the first run compiles a small\n"
          "      tracker against the installed torch, cached in ~/.cache/memtap);\n"
          "      --compact: integer rows (~35 B an event, written twice as fast) with\n"
          "      memscope_dump a view; memtap, SQL and pandas read it, MindStudio Insight\n"
          "      does not (it wants a table: leave --compact out for it)\n"
          "      --connect: stream into a monitor elsewhere (memtap record --listen),\n"
          "      recording nothing here; --keys DIR: the agent authenticates with the\n"
          "      keys in DIR (MEMTAP_KEYS; memtap keygen), as a monitor with --keys wants\n"
          "      --max-processes: how many processes may be recorded at once, as for record\n"
          "      --gui: watch it live in the window (memtap-gui) while it records;\n"
          "      --screenshot PNG [--screenshot-after 3s] [--size WxH] [--view NAME]\n"
          "      [--device cpu|N]\n"
          "      write a picture of the live window (no display needed) and go on\n"
          "  memtap record [--listen ENDPOINT [--keys DIR | --insecure]] [-o out.db]\n"
          "                [--compact] [--max-processes N]\n"
          "      a headless monitor: record every process that connects until Ctrl-C\n"
          "      or SIGTERM (default endpoint: the per-user IPC socket). tcp:// beyond\n"
          "      loopback takes --keys DIR (agents authenticated and the stream encrypted\n"
          "      with CURVE; agents set MEMTAP_KEYS) or, knowingly, --insecure;\n"
          "      tcp://HOST:* picks a free port; --max-processes: how many processes\n"
          "      may be recorded at once (4096), further ones are refused and counted\n"
          "  memtap report [--json] [--top N] [--lazy-used-ms MS] [--delayed-free-ms MS]\n"
          "                [--long-idle-ms MS] [--capacity-mb MB] [--low-memory] FILE\n"
          "      analyse a recording (memtap's, msMemScope's .db or .csv, CANN\n"
          "      operator_memory/memory_record .csv) and print the report; --low-memory\n"
          "      reads it in batches (chosen by itself when the file would not fit)\n"
          "  memtap replay FILE [--speed max|1x|10x] [--json] [report options]\n"
          "      feed a recording through the engine as if live, then print the report\n"
          "  memtap diff BASE NEW [--json] [--top N] [report options]\n"
          "      compare two runs (any files report reads), processes paired by rank or\n"
          "      start order: what differs, largest change first (peak and who held it,\n"
          "      live at the end, leaks per step, steps, fragmentation, time to OOM);\n"
          "      --top N: entries per list (10)\n"
          "  memtap monitor FILE | --listen ENDPOINT [--keys DIR | --insecure] [-o out.db]\n"
          "                 [--compact] [--max-processes N]\n"
          "                 [--screenshot PNG [--size WxH] [--view NAME] [--at TIME]]\n"
          "                 [--device cpu|N]\n"
          "      the window: open a recording (any file report reads), or watch every\n"
          "      process that streams to ENDPOINT live while recording it; --screenshot\n"
          "      renders offscreen, writes the PNG and exits\n"
          "  memtap export FILE [--format F] [--pid PID] [-o OUT]\n"
          "      write any file report reads in a format other tools read:\n"
          "      msmemscope-db (default): msMemScope's own memscope_dump table, which\n"
          "      MindStudio Insight opens (a memtap recording, --compact too, is copied);\n"
          "      msmemscope-csv: msMemScope's CSV export; operator-memory, memory-record:\n"
          "      torch_npu's operator_memory.csv (a block per row) and memory_record.csv\n"
          "      (the totals over time), one process each (--pid when there are several).\n"
          "      Default output: ./memscope_dump_<YYYYmmddHHMMSS>.db (.csv), or\n"
          "      ./operator_memory_<time>.csv, ./memory_record_<time>.csv\n"
          "  memtap import FILE [-o OUT.db]\n"
          "      make a file that is no database (a PyTorch memory snapshot, msMemScope's\n"
          "      or the profiler's CSVs) a recording in msMemScope's format, for report,\n"
          "      replay and monitor (default output: ./memscope_dump_<YYYYmmddHHMMSS>.db)\n"
          "  memtap recover FILE.partial [-o OUT]\n"
          "      finish a recording whose monitor was killed before it could, or that\n"
          "      a full disk stopped (what `report` and `monitor` call not finished):\n"
          "      indexes and tables added, renamed to FILE (default)\n"
          "  memtap check FILE [--max-peak SIZE] [--max-leak-per-step SIZE] [--max-growth SIZE]\n"
          "               [--max-fragmentation PCT] [--no-oom] [--baseline BASE.db\n"
          "               --max-peak-increase PCT] [--device cpu|N] [--strict] [--low-memory]\n"
          "      a guard for CI: exit 0 when the recording (any file report reads) keeps\n"
          "      every threshold, on each process's each device (only --device's, if\n"
          "      given), 1 with a line per violation naming who holds the memory, 2 when\n"
          "      it cannot check; --max-growth: live bytes at the end minus at the start;\n"
          "      --max-fragmentation: unused share of Reserved when the gap was largest;\n"
          "      --max-peak-increase: above BASE's peak (devices paired by rank or start\n"
          "      order); a recording that lacks events warns, and --strict fails on it\n"
          "  memtap keygen DIR\n"
          "      write CURVE key pairs for the monitor and its agents into DIR (made\n"
          "      mode 0700): monitor.key, monitor.pub, agent.key, agent.pub; never\n"
          "      replaces a key\n"
          "\n"
          "  memtap --version | --help\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  std::string cmd = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (cmd == "run") return memtap::run_command(args);
  if (cmd == "record") return memtap::record_command(args);
  if (cmd == "report") return memtap::report_command(args);
  if (cmd == "replay") return memtap::replay_command(args);
  if (cmd == "export") return memtap::export_command(args);
  if (cmd == "recover") return memtap::recover_command(args);
  if (cmd == "import") return memtap::import_command(args);
  if (cmd == "diff") return memtap::diff_command(args);
  if (cmd == "check") return memtap::check_command(args);
  if (cmd == "keygen") return memtap::keygen_command(args);
  if (cmd == "monitor") return memtap::monitor_command(args);
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    usage(stdout);
    return 0;
  }
  if (cmd == "--version") {
    printf("memtap %s\n", MEMTAP_VERSION);
    return 0;
  }
  fprintf(stderr, "memtap: unknown command '%s'\n", cmd.c_str());
  usage(stderr);
  return 2;
}
