/* corral-exec-spec.h — what to run in the guest (the params of exec.start).
 *
 * A reference-counted builder. Values are not trusted either (they may come from a model's tool
 * call): they are checked when the spec is used, and a bad spec fails the spawn with
 * CORRAL_AGENT_ERROR_INVALID_REQUEST instead of reaching the agent.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

#define CORRAL_TYPE_EXEC_SPEC (corral_exec_spec_get_type ())

typedef struct _CorralExecSpec CorralExecSpec;

GType corral_exec_spec_get_type (void);

CorralExecSpec *corral_exec_spec_new_argv (const char *const *argv);
CorralExecSpec *corral_exec_spec_new_shell (const char *command);
CorralExecSpec *corral_exec_spec_ref (CorralExecSpec *spec);
void corral_exec_spec_unref (CorralExecSpec *spec);

void corral_exec_spec_set_env (CorralExecSpec *spec, const char *key, const char *value);
void corral_exec_spec_set_cwd (CorralExecSpec *spec, const char *cwd);
void corral_exec_spec_set_user (CorralExecSpec *spec, const char *user);
void corral_exec_spec_set_stdin (CorralExecSpec *spec, gboolean enable);
/* rows = cols = 0 means no PTY. */
void corral_exec_spec_set_pty (CorralExecSpec *spec, guint rows, guint cols);
void corral_exec_spec_set_timeout_ms (CorralExecSpec *spec, guint64 timeout_ms);
void corral_exec_spec_set_background (CorralExecSpec *spec, gboolean background);
/* Without the second wall (seccomp filter and Landlock, SECURITY.md A7/A8): only when the
 * person asked for it, for a program that needs a refused call. */
void corral_exec_spec_set_unconfined (CorralExecSpec *spec, gboolean unconfined);
/* name: "nproc", "fsize", "nofile" or "cpu". */
void corral_exec_spec_set_rlimit (CorralExecSpec *spec, const char *name, guint64 value);
/* 0 = agent default. */
void corral_exec_spec_set_ring_size (CorralExecSpec *spec, gsize bytes);

gboolean corral_exec_spec_get_stdin (const CorralExecSpec *spec);
gboolean corral_exec_spec_get_background (const CorralExecSpec *spec);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralExecSpec, corral_exec_spec_unref)

G_END_DECLS
