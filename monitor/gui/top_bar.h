// The bar above the views: which process (rank, host) and device, Group By, the
// Fragmentation curve, Live/Paused, and the status line (events/s, events dropped, how far
// the view lags behind the processes, the recording's size; while a file loads, how much),
// beside them, or below them in a narrow window.
#pragma once

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QWidget>
#include <utility>

#include "monitor/gui/engine_client.h"
#include "monitor/gui/view_state.h"
#include "monitor/viewdata/curves_data.h"

namespace memtap::gui {

class TopBar : public QWidget {
  Q_OBJECT

 public:
  TopBar(ViewState* state, EngineClient* client, QWidget* parent = nullptr);

  // The refresh tick: the status line, and the selectors when processes or devices came.
  void refresh(const viewdata::SourceStatus& status);
  // Selects `device` (kHostDevice or a GPU ordinal) as soon as a process has it: the
  // current process if it does, else the first that does (--device). Without it, and until
  // someone picks one in the Device box, a process is shown on its first GPU once it has
  // one: a training run is watched for its GPU memory, not for the interpreter's heap.
  void preferDevice(int32_t device);
  // A device asked for with preferDevice that no process has shown yet, and which.
  bool preferredDevicePending() const { return has_preferred_device_; }
  int32_t preferredDevice() const { return preferred_device_; }
  // Every process's devices, as last listed.
  const std::vector<viewdata::ScopeEntry>& scopes() const { return scopes_; }

  // For tests: the selectors.
  QComboBox* processBox() { return process_; }
  QComboBox* deviceBox() { return device_; }
  QComboBox* groupByBox() { return group_by_; }
  QPushButton* liveButton() { return live_; }
  QLabel* statusLabel() { return status_; }

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  // The status line beside the selectors while its counts and states (`needed_width`
  // pixels, without the extras that give way) fit there; on a row of its own below them
  // when they do not, so that a narrow window still shows the drops whole.
  void placeStatus(int needed_width);
  // The status line's alignment for where it is and what it says.
  void alignStatus();
  void setScopes(const std::vector<viewdata::ScopeEntry>& scopes);
  void relabelProcesses();
  void fillDevices();
  void applyPreferredDevice();
  // Until someone picks a process (the box, or preferDevice), the lowest rank of a
  // distributed run, not its launcher (torchrun, a script that starts the ranks), which
  // holds a few MiB of interpreter; without ranks, the first process.
  void applyDefaultProcess();
  void showFollowing(bool on);

  ViewState* state_;
  EngineClient* client_;
  QComboBox* process_;
  QComboBox* device_;
  QComboBox* group_by_;
  QCheckBox* fragmentation_;
  QPushButton* live_;
  QLabel* status_;
  QHBoxLayout* selectors_;
  bool status_below_ = false;
  int needed_width_ = 0;
  std::vector<viewdata::ScopeEntry> scopes_;
  viewdata::SourceStatus last_status_;
  bool asking_scopes_ = false;
  uint64_t scopes_events_ = 0;  // the events analysed when the scopes were last asked for
  std::pair<size_t, int> labelled_{0, 0};  // processes known and items when last labelled
  bool has_preferred_device_ = false;
  int32_t preferred_device_ = 0;
  // Someone chose a device (the Device box, --device): until then a process's GPU, as soon
  // as it has one, is shown rather than its host memory (fillDevices).
  bool device_chosen_ = false;
  bool process_chosen_ = false;
};

}  // namespace memtap::gui
