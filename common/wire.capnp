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
const protocolVersion :UInt32 = 5;  # 2: context events, stringId, Batch.strings; 3: device
                                    # events; 4: the framework pool (poolMalloc .. poolState);
                                    # 5: poolPeaks (an older monitor would refuse each batch
                                    # holding one as malformed and lose its other events: the
                                    # version refuses the agent whole, with a clear error)

enum EventKind {
  malloc @0;   # heap block from the malloc family (layer HOST)
  free @1;     # heap block released; sizeBytes is 0 (the monitor knows it)
  mmap @2;     # anonymous mapping (layer HOST, attribute kind=mmap)
  munmap @3;   # unmapping of [addr, addr+sizeBytes)
  fork @4;     # this process fork()ed; addr is the child's pid. The child starts with a
               # copy of the parent's heap at this instant and sends its own Hello.
  rssSample @5;  # sizeBytes: the process's resident set, sampled by the sender (App Reserved)

  # The training run's context (the memtap_* C ABI, agent/memtap.h; the Python package).
  # stringId names interned text (Batch.strings). Owner, operator and stack events apply
  # to the events of the same thread that follow them, in the thread's order.
  step @6;         # SYSTEM STEP: a training step begins; addr: the step's number (1, 2, ...)
  mark @7;         # MSTX Mark; stringId: the text
  rangeStart @8;   # MSTX Range_start; stringId: the range's name (ranges may overlap)
  rangeEnd @9;     # MSTX Range_end; stringId: the name of the range it ends
  ownerPush @10;   # stringId: an owner level; this thread's allocations belong to it until
                   # the matching ownerPop (nested levels join with '@')
  ownerPop @11;
  opStart @12;     # OP_LAUNCH ATEN_START; stringId: the operator (aten op) name. Blocks the
                   # thread allocates until the matching opEnd are named after it
  opEnd @13;       # OP_LAUNCH ATEN_END; stringId: the operator name
  pythonStack @14; # stringId: the Python call stack (innermost first, "file(line): function"
                   # a line) of this thread's next malloc or mmap event
  cStack @15;      # stringId: the C call stack ("module(symbol+0xoff) [0xaddr]" a line) of this
                   # thread's next malloc or mmap event
  traceSlice @16;  # a Python tracer slice: stringId: FuncInfo ("file(line): function");
                   # addr, sizeBytes: its start and end (monotonic ns, like tsNs)

  # GPU memory (CUDA; agent/hooks/cuda_*.cpp). `device` is the CUDA device ordinal (the
  # current context's device when the call was made). The outermost CUDA call the program
  # made records (a cudaMalloc, not also the cuMemAlloc the runtime makes for it).
  deviceMalloc @17;  # HAL MALLOC: device memory from the runtime or driver (addr, sizeBytes);
                     # stringId: the API that allocated it ("cudaMalloc", "cuMemMap", ...)
  deviceFree @18;    # HAL FREE of the block at addr (sizeBytes 0)
  pinnedMalloc @19;  # HOST_PINNED MALLOC: page-locked host memory (cudaMallocHost, ...);
                     # stringId: the API
  pinnedFree @20;    # HOST_PINNED FREE
  kernelLaunch @21;  # KERNEL_LAUNCH; stringId: the kernel's name; addr: the stream
  deviceOom @22;     # an allocation failed for lack of device memory (OOM_DETAIL OOM_TRIGGER):
                     # sizeBytes: what was asked for; stringId: the API; addr: the stream
  deviceInfo @23;    # the device's capacity, recorded once per device when the process first
                     # allocates on it: addr: free bytes then, sizeBytes: total bytes
  deviceStream @24;  # addr: the stream (a handle) of this thread's next device event

  # The framework's caching pool (layer PTA): blocks a pool carves out of the memory it got
  # from the driver (which the hooks above record as HAL). Reported through the
  # memtap_pool_* C ABI (agent/memtap.h): by memtap.torch's trace tracker for PyTorch's CUDA
  # caching allocator, or by any pool. `device`: the CUDA ordinal the pool serves; a
  # deviceStream record goes before each poolMalloc / poolFree / poolFreeCompleted.
  poolMalloc @25;         # PTA MALLOC: a block handed out (addr, sizeBytes)
  poolFree @26;           # PTA FREE: the block's free was requested (Allocated drops); sizeBytes 0
  poolFreeCompleted @27;  # the pool took the block at addr back (Active drops): at once after
                          # its poolFree, or once the other streams that used it are done
  poolState @28;          # what the pool holds on `device`: addr: allocated bytes (in blocks),
                          # sizeBytes: reserved bytes (segments); after a segment change, or
                          # sampled (torch.cuda.memory_stats() at each step)
  poolPeaks @29;          # torch.cuda.memory_stats()'s peaks on `device`: addr: max allocated
                          # bytes, sizeBytes: max reserved bytes (both below 2^63); goes right
                          # before the sampled poolState it belongs to, on the same thread
                          # (the monitor holds it for the device's next poolState)
}

struct Event {
  tsNs @0 :UInt64;        # agent's CLOCK_MONOTONIC; Hello carries the realtime reference
  kind @1 :EventKind;
  addr @2 :UInt64;
  sizeBytes @3 :UInt64;
  stringId @4 :UInt32;    # 0: none; else an id of Batch.strings (this or an earlier batch of
                          # the same agent instance; the monitor also waits a little for it)
  device @5 :UInt16;      # device and pool events (deviceMalloc .. poolPeaks): the CUDA device
                          # ordinal; 0 for every other kind. Fills the hole after kind, so
                          # an Event stays four words
}

# Interned text: ids are per agent instance, never reused, defined once.
struct StringDef {
  id @0 :UInt32;
  text @1 :Text;
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
  eventsSentBefore @11 :UInt64 = 0xffffffffffffffff;
      # Events this instance handed to the wire before this Hello, over earlier connections
      # (0 on its first). A Hello again after a reconnection (a restarted monitor) says so,
      # so that of Bye.eventsSent only eventsSent - eventsSentBefore was this monitor's to
      # receive: the rest went to an earlier monitor, recorded there or lost in flight when
      # it stopped. Its default, all ones, is "not said": an older agent's Hello reads so,
      # and the monitor then counts no loss rather than the earlier share as lost. An older
      # monitor ignores the field, hence no version bump.
  execedFrom @12 :ExecedFrom;
      # Set when this image replaced, by exec(), a traced image of the same pid: that
      # instance's last word, which it could not send itself (its exec flush closed its
      # socket, and exec leaves no time for a Bye). An older monitor ignores it.
}

# What an instance that ended in exec() had handed to the wire and dropped, as a Bye would
# say: carried across exec in the new image's environment (agent/exec_handoff.h).
struct ExecedFrom {
  instanceId @0 :UInt64;   # the old instance's Message.instanceId
  eventsSent @1 :UInt64;   # as Bye.eventsSent
  droppedTotal @2 :UInt64; # as Bye.droppedTotal: the exec flush's unsent events included
  instanceSecret @3 :UInt64;  # the old instance's Message.instanceSecret: only its own word
                              # counts for it (pid and instance are public)
}

struct Batch {
  threads @0 :List(ThreadEvents);
  droppedSoFar @1 :UInt64;     # events lost in the agent since it started (buffer bound reached),
                               # plus texts its string log refused (full, MEMTAP_STRING_MB)
  watermarkNs @2 :UInt64;      # every later event of this process has tsNs >= watermarkNs
  strings @3 :List(StringDef); # text interned since the previous batch, defined before any
                               # event of this batch that refers to it
  modules @5 :List(LoadedModule);
      # Objects (the executable, shared libraries, dlopen()ed ones) loaded since the previous
      # batch, all of them in the first: what the monitor needs to symbolise the return
      # addresses of C stacks. A batch carries every module any of its stacks' frames lie in
      # (the sender looks for new modules after draining). An older monitor ignores them.
  sentBefore @4 :UInt64 = 0xffffffffffffffff;
      # Events this instance handed to the wire before this batch, counted as Bye.eventsSent
      # and Hello.eventsSentBefore count them: what the monitor has not received of them by
      # now was lost on the way, known without waiting for a Bye that a killed process never
      # sends. All ones: not said (an older agent). An older monitor ignores it.
}

# One loaded object of a process, as dl_iterate_phdr reports it.
struct LoadedModule {
  path @0 :Text;        # absolute (the executable's from /proc/self/exe); "[vdso]" for the vDSO
  loadBias @1 :UInt64;  # dlpi_addr: what is added to the file's virtual addresses
  start @2 :UInt64;     # the lowest and one past the highest address of its PT_LOAD segments
  end @3 :UInt64;
  buildId @4 :Data;     # NT_GNU_BUILD_ID's bytes; empty when it has none
}

# How a process ended, as its agent saw it last (memtap_session's `ended_by`).
enum ProcessEnd {
  unknown @0;    # not said: an agent that stopped tracing for another reason
  exited @1;     # exit(), _exit(), a return from main: endCode is the exit status (0-255)
  signalled @2;  # a fatal signal the crash flush caught: endCode is its number; the
                 # process then dies of it unless a handler of its own recovers
  execed @3;     # replaced by exec(): the new image, same pid, sends a Hello of its own
}

struct Bye {
  tsNs @3 :UInt64;             # when the agent stopped tracing (monotonic, like Event.tsNs)
  droppedTotal @0 :UInt64;
  eventsSent @1 :UInt64;
  childPids @2 :List(UInt32);  # fork() children still traced; the monitor waits for them too
  end @4 :ProcessEnd;          # new fields: an older monitor ignores them, hence no version bump
  endCode @5 :Int32;
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
  reopened @7 :Bool;           # sent on a connection the agent opened again after closing the
                               # last one itself (around an exec that failed): messages of lower
                               # sequence may still be on their way over the closed one. Ignored
                               # by an older monitor, hence no version bump
  instanceSecret @8 :UInt64;   # random per agent start, like instanceId, but never written down
                               # or shown: the monitor takes a message for (pid, instanceId) only
                               # with the secret that instance's first Hello carried, so another
                               # sender that read pid and instance in a recording cannot write
                               # into that process's stream. 0 from an older agent (which then
                               # has no such protection); ignored by an older monitor
}
