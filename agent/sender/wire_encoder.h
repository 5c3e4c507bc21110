// Turns what the agent knows into wire::Message bytes (flat, unpacked) (common/wire.capnp).
#pragma once

#include <capnp/message.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/sender/buffer_drain.h"
#include "agent/sender/module_scan.h"
#include "agent/sender/sender_api.h"
#include "agent/sender/string_drain.h"

namespace memtap {

struct MessageHeader {
  uint32_t pid;
  uint64_t instance_id;
  uint64_t sequence;
  uint64_t instance_secret = 0;  // Message.instanceSecret
  bool reopened = false;         // Message.reopened
};

// `events_sent_before`: events handed to earlier connections (Hello.eventsSentBefore).
std::string encode_hello(const MessageHeader& h, const MemtapSenderConfig& config,
                         uint64_t trace_start_ns, uint64_t events_sent_before);
std::string encode_bye(const MessageHeader& h, uint64_t ts_ns, uint64_t dropped_total,
                       uint64_t events_sent, const std::vector<uint32_t>& child_pids, int32_t end,
                       int32_t end_code);

// Batches, built where they are sent from. The sender encodes millions of events a second
// inside the training process: building each batch in fresh memory and then copying it out
// (messageToFlatArray, a string, ZeroMQ's own copy) cost it more than the application's own
// allocations in an allocation storm (page faults, copies). Here the segment table is
// written in the word before the segment, so the message is already flat where it was
// built; a thread's records are copied into the event list as they are when EventRecord lies
// like wire::Event (common/event_record.h); and ZeroMQ sends the batch from that memory
// (lend()) instead of copying it, so each batch has a buffer of its own until ZeroMQ is
// done with it.
class BatchEncoder {
 public:
  BatchEncoder();
  ~BatchEncoder();

  // The message's bytes, in a buffer that ZeroMQ does not hold; they stay valid until the
  // next encode() (or the encoder's end), and longer if lent.
  // strings: the texts defined in this batch (Batch.strings), before any of its events.
  // sent_before: Batch.sentBefore (all ones: not said). modules: Batch.modules, the objects
  // loaded since the last batch.
  std::string_view encode(const MessageHeader& h, const DrainResult& drained,
                          const std::vector<StringText>& strings, uint64_t dropped_so_far,
                          uint64_t watermark_ns, uint64_t sent_before = ~uint64_t{0},
                          const std::vector<ScannedModule>& modules = {});

  // Marks the buffer that holds `bytes` as held by ZeroMQ, for zmq_msg_init_data: the hint
  // returned is passed back to release_lent when ZeroMQ frees the message, and the buffer is
  // not written until then. Null when `bytes` are not this encoder's last batch in one of its
  // buffers (Hello and Bye, or a batch too large for its buffer): those are copied.
  void* lend(std::string_view bytes);
  // zmq_free_fn, with lend()'s hint. Called on ZeroMQ's I/O thread.
  static void release_lent(void* data, void* hint);

  // Whether encode() has a buffer to write in, waiting up to timeout_ms for ZeroMQ to give
  // one back. At most kMaxBuffers batches exist at once: every buffer beyond the first few
  // is fresh memory that page-faults as it is written (a third of the sender thread in an
  // allocation storm, when ZeroMQ's queue could hold 256 batches), and a monitor that falls
  // behind should leave the records in the agent's bounded buffers, not here.
  bool wait_for_room(int timeout_ms);
  static constexpr size_t kMaxBuffers = 8;
  size_t buffers() const { return pool_.size(); }

  // Whether records are copied whole (true wherever EventRecord matches the schema).
  bool copies_records() const { return copy_records_; }
  // For tests: set each field with the generated setters, as if the layouts differed.
  void set_copy_records(bool copy) { copy_records_ = copy && records_match_schema_; }

 private:
  struct Buffer {
    // Zeroed, but for the message the builder below is writing: Cap'n Proto needs a zeroed
    // first segment, and the builder zeroes what it used when it is destroyed.
    std::vector<capnp::word> words;
    std::optional<capnp::MallocMessageBuilder> builder;
    std::atomic<bool> lent{false};
    BatchEncoder* owner = nullptr;
  };
  Buffer* find_free() const;  // a buffer ZeroMQ is not holding, or null
  Buffer* free_buffer();

  std::vector<std::unique_ptr<Buffer>> pool_;
  std::mutex returned_mutex_;  // with returned_: ZeroMQ's I/O thread gave a buffer back
  std::condition_variable returned_;
  Buffer* last_ = nullptr;  // the last batch's, unless it spilled
  std::string spilled_;     // a batch larger than the estimate: flattened the usual way
  bool records_match_schema_;
  bool copy_records_;
};

}  // namespace memtap
