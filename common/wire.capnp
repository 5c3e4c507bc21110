# The wire between an agent (one traced process) and a monitor.
#
# Every ZeroMQ message is one `Message`, unpacked (messageToFlatArray): packing costs
# the agent ~80 ns per event, which would come out of the training process. An agent sends one Hello,
# then Batches, then one Bye. The monitor treats every message as untrusted:
# a wrong protocolVersion is rejected with a clear error, never decoded as garbage.
# Field names here are the project's vocabulary: the engine, the SQLite mapping
# and the GUI use the same names (units in the name: tsNs, sizeBytes).

@0xb6c1f0c7a5d2e913;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("memtap::wire");

# Bumped on any change that an older monitor could misread.
const protocolVersion :UInt32 = 1;

enum EventKind {
  malloc @0;   # heap block from the malloc family (layer HOST)
  free @1;     # heap block released; sizeBytes is 0 (the monitor knows it)
  mmap @2;     # anonymous mapping (layer HOST, attribute kind=mmap)
  munmap @3;   # unmapping of [addr, addr+sizeBytes)
  fork @4;     # this process fork()ed; addr is the child's pid. The child starts with a
               # copy of the parent's heap at this instant and sends its own Hello.
  rssSample @5;  # sizeBytes: the process's resident set, sampled by the sender (App Reserved)
}

struct Event {
  tsNs @0 :UInt64;        # agent's CLOCK_MONOTONIC; Hello carries the realtime reference
  kind @1 :EventKind;
  addr @2 :UInt64;
  sizeBytes @3 :UInt64;
}

struct ThreadEvents {
  threadId @0 :UInt32;    # kernel tid (gettid)
  events @1 :List(Event); # in the thread's own order, timestamps non-decreasing
}

struct Hello {
  ppid @0 :UInt32;
  hostname @1 :Text;
  commandLine @2 :List(Text);
  rank @3 :Int32;              # from RANK / OMPI_COMM_WORLD_RANK / PMI_RANK / SLURM_PROCID; -1 if none
  worldSize @4 :Int32;         # from WORLD_SIZE / ...; -1 if none
  clockMonotonicNs @5 :UInt64; # the same instant read on both clocks, to map tsNs to epoch time
  clockRealtimeNs @6 :UInt64;
  agentVersion @7 :Text;
  forkedFromPid @8 :UInt32;    # non-zero when this process is a fork() child that kept the agent
  memoryTotalBytes @10 :UInt64;  # what the host lets this process have: the cgroup limit,
                                 # else MemTotal (the capacity for time-to-OOM); 0 unknown
  traceStartNs @9 :UInt64;     # monotonic time of the first event the agent could record (its
                               # first hook call, before its own constructor); 0: the Hello's time
}

struct Batch {
  threads @0 :List(ThreadEvents);
  droppedSoFar @1 :UInt64;     # events lost in the agent since it started (buffer bound reached)
  watermarkNs @2 :UInt64;      # every later event of this process has tsNs >= watermarkNs
}

struct Bye {
  tsNs @3 :UInt64;             # when the agent stopped tracing (monotonic, like Event.tsNs)
  droppedTotal @0 :UInt64;
  eventsSent @1 :UInt64;
  childPids @2 :List(UInt32);  # fork() children still traced; the monitor waits for them too
}

struct Message {
  protocolVersion @0 :UInt32;
  pid @1 :UInt32;
  instanceId @2 :UInt64;       # random per agent start: pids are reused, instances are not
  sequence @3 :UInt64;         # 0 for Hello, then +1 per message; a gap means lost messages
  body :union {
    hello @4 :Hello;
    batch @5 :Batch;
    bye @6 :Bye;
  }
}
