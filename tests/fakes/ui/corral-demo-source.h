/* corral-demo-source.h — a scripted CorralChatSource for the tests and the screenshots: it
 * streams a reply, runs two tool calls, asks to delete report-old.docx and to reach pypi.org,
 * and waits for each answer. Never shown to users.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-chat-source.h"

G_BEGIN_DECLS

#define CORRAL_TYPE_DEMO_SOURCE (corral_demo_source_get_type ())
G_DECLARE_FINAL_TYPE (CorralDemoSource, corral_demo_source, CORRAL, DEMO_SOURCE, GObject)

CorralDemoSource *corral_demo_source_new (void);
/* Pause between script steps (default 40 ms; 0: as fast as the main loop goes). */
void corral_demo_source_set_step_delay (CorralDemoSource *self, guint delay_ms);
/* The shared folder on this computer that the delete question names (default
 * /home/user/Documents). */
void corral_demo_source_set_folder (CorralDemoSource *self, const char *folder);
/* The answers given so far, in order: "delete:allow-once", "network:deny"... (transfer none) */
const GPtrArray *corral_demo_source_get_answers (CorralDemoSource *self);
/* TRUE while a task runs (between send and task-finished). */
gboolean corral_demo_source_is_busy (CorralDemoSource *self);
/* The next message ends at once on a passing failure (can_retry); retry goes on. */
void corral_demo_source_fail_next (CorralDemoSource *self);
guint corral_demo_source_get_retries (CorralDemoSource *self);

G_END_DECLS
