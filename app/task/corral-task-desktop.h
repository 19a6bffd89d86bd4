/* corral-task-desktop.h — waiting for a VM's desktop. An image with one (guest-image/desktop)
 * starts it at boot and marks it up (/run/corral/desktop-ready); a task with a screen is
 * handed over once there is a desktop to see, not a black screen, so that the assistant's first
 * screenshot is worth taking. One wait for the app's start and reopen and for corralctl.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <gio/gio.h>

#include "corral-agent-client.h"

G_BEGIN_DECLS

#define CORRAL_TASK_DESKTOP_SERVICE "/usr/lib/corral/services/desktop"
#define CORRAL_TASK_DESKTOP_READY "/run/corral/desktop-ready"
#define CORRAL_TASK_DESKTOP_TIMEOUT_S 600

/* Asks the guest, through client (connected), whether its image has a desktop and, when it
 * has, waits until it is up: waiting (nullable) is called once, before the wait, when there is
 * one to wait for. Errors: the agent's, G_IO_ERROR_TIMED_OUT after
 * CORRAL_TASK_DESKTOP_TIMEOUT_S (naming the guest's log), G_IO_ERROR_CANCELLED. */
void corral_task_wait_desktop_async (CorralAgentClient *client,
                                     void (*waiting) (gpointer data),
                                     gpointer waiting_data,
                                     GCancellable *cancellable,
                                     GAsyncReadyCallback callback,
                                     gpointer user_data);
gboolean corral_task_wait_desktop_finish (GAsyncResult *result, GError **error);

G_END_DECLS
