/* The agent's C ABI: what a traced program (or the Python package, through ctypes)
 * may call. Every symbol the agent exports is either a hook or starts with memtap_. */
#ifndef MEMTAP_AGENT_MEMTAP_H
#define MEMTAP_AGENT_MEMTAP_H

#ifdef __cplusplus
extern "C" {
#endif

/* The agent's version, e.g. "0.1.0". */
const char* memtap_agent_version(void);
/* 1 while the agent records events, 0 when disabled or stopped. */
int memtap_agent_active(void);

#ifdef __cplusplus
}
#endif

#endif
