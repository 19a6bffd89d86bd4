/* corral-thread.h — a blocking call run on a worker thread, its answer delivered on the
 * caller's main context: how the task service and the widgets keep libvirt, files and child
 * daemons off the main loop.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/* A blocking call for a worker thread: returns a result (freed with result_free when nobody
 * takes it) or NULL with error set. */
typedef gpointer (*CorralThreadFunc) (gpointer data, GCancellable *cancellable, GError **error);

/* Runs func (data) on a worker thread; callback runs on the caller's thread-default main
 * context. data is freed with data_free after func returns. */
void corral_run_in_thread (CorralThreadFunc func,
                           gpointer data,
                           GDestroyNotify data_free,
                           GDestroyNotify result_free,
                           GCancellable *cancellable,
                           GAsyncReadyCallback callback,
                           gpointer user_data);
/* (transfer full) the result of func */
gpointer corral_run_in_thread_finish (GAsyncResult *result, GError **error);

/* Runs func (data) on context's thread, from a later turn of its loop (G_PRIORITY_DEFAULT);
 * notify (nullable) frees data afterwards. Safe from any thread. Not g_main_context_invoke():
 * called on a thread that can acquire the context, that runs func at once on the caller's
 * thread, with whatever locks it holds. */
void corral_main_context_post (GMainContext *context,
                               GSourceFunc func,
                               gpointer data,
                               GDestroyNotify notify);

G_END_DECLS
