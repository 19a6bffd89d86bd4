/* bench-common.h — shared scaffolding of the agent benchmarks: a local corral-agent, a
 * connected client, blocking helpers that iterate the main context, and timing.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>

#include "corral-vmm.h"

typedef struct {
        CorralAgentClient *client;
        GPid pid;
} BenchAgent;

/* Starts $CORRAL_AGENT_PATH --fd 3 --user <me> and connects; aborts with a message on failure. */
void bench_agent_start (BenchAgent *agent);
void bench_agent_stop (BenchAgent *agent);

/* Iterates the default main context until *done is set. */
void bench_wait (gboolean *done);

double bench_now (void); /* seconds, monotonic */
double bench_median (GArray *samples /* of double */);

/* Runs /bin/true through client to its exit status; aborts with what when that fails. */
void bench_exec_true (CorralAgentClient *client);

/* Streams `head -c bytes /dev/zero` from the guest as output events. Returns the seconds it
 * took and sets *ret_bytes to what arrived; -1 with error when the command failed. */
double
bench_stream_zero (CorralAgentClient *client, guint bytes, guint64 *ret_bytes, GError **error);
