/* corral-process.c — a guest process: output signals, stdin, exit status, spawn and attach.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-process.h"

#include "corral-agent-private.h"

#include <glib/gi18n-lib.h>

typedef struct {
        guint stream;
        GBytes *bytes;
} HeldChunk;

typedef struct {
        guint64 key;
        GTask *task;
        GCancellable *cancellable;
        gulong handler;
} Waiter;

struct _CorralProcess {
        GObject parent_instance;

        CorralAgentClient *client;
        CorralChannel *channel; /* NULL once exited, detached or lost */
        guint64 proc_id;
        gint64 pid;

        /* Until the spawn/attach callback has run nobody can be connected to ::output, so
         * output is held (at most one credit window) and emitted from an idle afterwards. */
        gboolean ready;
        GQueue held; /* HeldChunk */
        GSource *flush_source;

        gboolean exit_pending;
        gboolean exited;
        int exit_code;
        int term_signal;
        gboolean timed_out;
        GStrv refused; /* system calls the guest's filter refused (names checked), or NULL */
        GError *error; /* connection lost or detached */

        GQueue waiters; /* Waiter */
        guint64 next_waiter;
};

enum { SIGNAL_OUTPUT, SIGNAL_EXITED, N_SIGNALS };
static guint signals[N_SIGNALS];

G_DEFINE_FINAL_TYPE (CorralProcess, corral_process, G_TYPE_OBJECT)

static void
held_chunk_free (HeldChunk *chunk)
{
        g_bytes_unref (chunk->bytes);
        g_free (chunk);
}

static void
waiter_free (Waiter *w)
{
        if (w->handler)
                g_cancellable_disconnect (w->cancellable, w->handler);
        g_clear_object (&w->cancellable);
        g_clear_object (&w->task);
        g_free (w);
}

static void
corral_process_init (CorralProcess *self)
{
        self->exit_code = -1;
}

static void
drop_channel (CorralProcess *self, gboolean send_close)
{
        CorralChannel *ch = g_steal_pointer (&self->channel);

        if (!ch)
                return;
        corral_channel_close (ch, send_close);
        corral_channel_unref (ch);
}

static void
corral_process_dispose (GObject *object)
{
        CorralProcess *self = CORRAL_PROCESS (object);

        /* Nobody reads any more: tell the agent to stop sending. */
        drop_channel (self, TRUE);
        if (self->flush_source) {
                g_source_destroy (self->flush_source);
                g_clear_pointer (&self->flush_source, g_source_unref);
        }
        g_queue_clear_full (&self->held, (GDestroyNotify) held_chunk_free);
        g_clear_object (&self->client);
        G_OBJECT_CLASS (corral_process_parent_class)->dispose (object);
}

static void
corral_process_finalize (GObject *object)
{
        CorralProcess *self = CORRAL_PROCESS (object);

        g_clear_error (&self->error);
        g_clear_pointer (&self->refused, g_strfreev);
        G_OBJECT_CLASS (corral_process_parent_class)->finalize (object);
}

static void
corral_process_class_init (CorralProcessClass *klass)
{
        GObjectClass *object_class = G_OBJECT_CLASS (klass);

        object_class->dispose = corral_process_dispose;
        object_class->finalize = corral_process_finalize;

        signals[SIGNAL_OUTPUT] =
                g_signal_new ("output", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                              NULL, G_TYPE_NONE, 2, G_TYPE_UINT, G_TYPE_BYTES);
        signals[SIGNAL_EXITED] =
                g_signal_new ("exited", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                              NULL, G_TYPE_NONE, 0);
}

/* Waiters ------------------------------------------------------------------------------------ */

static void
complete_waiters (CorralProcess *self)
{
        GQueue waiters = self->waiters;
        Waiter *w;

        g_queue_init (&self->waiters);
        while ((w = g_queue_pop_head (&waiters))) {
                if (self->error)
                        g_task_return_error (w->task, g_error_copy (self->error));
                else
                        g_task_return_boolean (w->task, TRUE);
                waiter_free (w);
        }
}

static void
waiter_cancelled (gpointer object, guint64 key)
{
        CorralProcess *self = object;

        for (GList *l = self->waiters.head; l; l = l->next) {
                Waiter *w = l->data;

                if (w->key == key) {
                        g_queue_delete_link (&self->waiters, l);
                        g_task_return_error_if_cancelled (w->task);
                        waiter_free (w);
                        return;
                }
        }
}

void
corral_process_wait_async (CorralProcess *self,
                           GCancellable *cancellable,
                           GAsyncReadyCallback callback,
                           gpointer user_data)
{
        g_autoptr (GTask) task = NULL;
        Waiter *w;

        g_return_if_fail (CORRAL_IS_PROCESS (self));
        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_source_tag (task, corral_process_wait_async);
        if (self->exited) {
                g_task_return_boolean (task, TRUE);
                return;
        }
        if (self->error && !self->flush_source) {
                g_task_return_error (task, g_error_copy (self->error));
                return;
        }
        w = g_new0 (Waiter, 1);
        w->key = ++self->next_waiter;
        w->task = g_steal_pointer (&task);
        g_queue_push_tail (&self->waiters, w);
        if (cancellable) {
                w->cancellable = g_object_ref (cancellable);
                w->handler = _corral_cancel_connect (cancellable, self, w->key, waiter_cancelled);
        }
}

gboolean
corral_process_wait_finish (CorralProcess *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
        return g_task_propagate_boolean (G_TASK (result), error);
}

/* Output and exit ------------------------------------------------------------------------------- */

static void
emit_output (CorralProcess *self, guint stream, GBytes *bytes)
{
        G_GNUC_UNUSED g_autoptr (CorralProcess) keep = g_object_ref (self);
        CorralChannel *ch = self->channel ? corral_channel_ref (self->channel) : NULL;
        gsize len = g_bytes_get_size (bytes);

        g_signal_emit (self, signals[SIGNAL_OUTPUT], 0, stream, bytes);
        /* Only now may the agent send more: a slow handler slows the process down. */
        if (ch) {
                corral_channel_consumed (ch, len);
                corral_channel_unref (ch);
        }
}

static void
finish_exit (CorralProcess *self)
{
        G_GNUC_UNUSED g_autoptr (CorralProcess) keep = g_object_ref (self);

        self->exit_pending = FALSE;
        self->exited = TRUE;
        g_clear_error (&self->error); /* it did exit, whatever happened to the connection later */
        g_signal_emit (self, signals[SIGNAL_EXITED], 0);
        complete_waiters (self);
}

static gboolean
flush_cb (gpointer user_data)
{
        CorralProcess *self = user_data;
        HeldChunk *chunk;

        g_clear_pointer (&self->flush_source, g_source_unref);
        while ((chunk = g_queue_pop_head (&self->held))) {
                emit_output (self, chunk->stream, chunk->bytes);
                held_chunk_free (chunk);
        }
        if (self->exit_pending)
                finish_exit (self);
        else if (self->error)
                complete_waiters (self);
        return G_SOURCE_REMOVE;
}

static void
schedule_flush (CorralProcess *self)
{
        if (self->flush_source)
                return;
        self->flush_source = g_idle_source_new ();
        g_source_set_callback (self->flush_source, flush_cb, g_object_ref (self), g_object_unref);
        g_source_attach (self->flush_source, g_main_context_get_thread_default ());
}

static void
set_ready (CorralProcess *self)
{
        self->ready = TRUE;
        if (!g_queue_is_empty (&self->held) || self->exit_pending || self->error)
                schedule_flush (self);
}

static void
on_data (gpointer owner,
         CorralChannel *ch,
         guint stream,
         gboolean eof,
         const guint8 *data,
         gsize len)
{
        CorralProcess *self = owner;
        g_autoptr (GBytes) bytes = NULL;

        if (len == 0)
                return;
        bytes = g_bytes_new (data, len);
        if (self->ready && g_queue_is_empty (&self->held)) {
                emit_output (self, stream, bytes);
        } else {
                HeldChunk *chunk = g_new (HeldChunk, 1);

                chunk->stream = stream;
                chunk->bytes = g_steal_pointer (&bytes);
                g_queue_push_tail (&self->held, chunk);
        }
}

/* A system call's name as the guest reports it: at most 31 of [a-z0-9_]. */
static gboolean
syscall_name_valid (const char *s)
{
        gsize n = 0;

        for (; s && *s; s++, n++)
                if (!(g_ascii_islower (*s) || g_ascii_isdigit (*s) || *s == '_'))
                        return FALSE;
        return n > 0 && n < 32;
}

/* "refused": at most 8 names; anything else is a malformed event. */
static gboolean
parse_refused (CorralProcess *self, const cJSON *params)
{
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive (params, "refused");
        g_autoptr (GStrvBuilder) b = NULL;
        const cJSON *item;
        int n = 0;

        if (!arr)
                return TRUE;
        if (!cJSON_IsArray (arr) || cJSON_GetArraySize (arr) > 8)
                return FALSE;
        b = g_strv_builder_new ();
        cJSON_ArrayForEach (item, arr) {
                if (!cJSON_IsString (item) || !syscall_name_valid (item->valuestring))
                        return FALSE;
                g_strv_builder_add (b, item->valuestring);
                n++;
        }
        if (n > 0)
                self->refused = g_strv_builder_end (b);
        return TRUE;
}

static gboolean
parse_exit (CorralProcess *self, const cJSON *params)
{
        int64_t code = -1, sig = 0;
        gboolean has_code, has_signal;
        bool timed_out = false;

        has_code = proto_json_get_int (params, "code", G_MININT32, G_MAXINT32, &code) == 0;
        has_signal = proto_json_get_int (params, "signal", 1, 255, &sig) == 0;
        if (has_code == has_signal ||
            proto_json_get_bool (params, "timed_out", &timed_out) == -EINVAL)
                return FALSE;
        self->exit_code = has_code ? (int) code : -1;
        self->term_signal = (int) sig;
        self->timed_out = timed_out;
        return parse_refused (self, params);
}

static void
on_event (gpointer owner, CorralChannel *ch, const char *name, const cJSON *params)
{
        CorralProcess *self = owner;

        if (!parse_exit (self, params)) {
                _corral_client_protocol_error (corral_channel_get_client (ch),
                                               "malformed exec.exit");
                return;
        }
        drop_channel (self, FALSE);
        self->exit_pending = TRUE;
        if (self->ready && g_queue_is_empty (&self->held))
                finish_exit (self);
}

static void
on_lost (gpointer owner, CorralChannel *ch, const GError *error)
{
        CorralProcess *self = owner;

        g_clear_pointer (&self->channel, corral_channel_unref);
        if (!self->error)
                self->error = g_error_copy (error);
        if (self->ready && g_queue_is_empty (&self->held))
                complete_waiters (self);
}

static const CorralChannelFuncs process_funcs = { on_data, on_event, on_lost };

/* Control ------------------------------------------------------------------------------------ */

void
corral_process_write_async (CorralProcess *self,
                            GBytes *data,
                            GCancellable *cancellable,
                            GAsyncReadyCallback callback,
                            gpointer user_data)
{
        g_return_if_fail (CORRAL_IS_PROCESS (self));
        g_return_if_fail (data != NULL);

        if (!self->channel) {
                g_task_report_new_error (self, callback, user_data, corral_channel_write_async,
                                         G_IO_ERROR, G_IO_ERROR_CLOSED,
                                         _ ("The process is no longer attached"));
                return;
        }
        corral_channel_write_async (self->channel, self, data, FALSE, cancellable, callback,
                                    user_data);
}

gboolean
corral_process_write_finish (CorralProcess *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
        return corral_channel_write_finish (result, error);
}

void
corral_process_close_stdin (CorralProcess *self)
{
        g_return_if_fail (CORRAL_IS_PROCESS (self));
        if (self->channel)
                corral_channel_write_async (self->channel, self, NULL, TRUE, NULL, NULL, NULL);
}

void
corral_process_kill (CorralProcess *self, int signum)
{
        cJSON *params;

        g_return_if_fail (CORRAL_IS_PROCESS (self));
        g_return_if_fail (signum > 0 && signum < 128);
        if (self->exited || self->exit_pending || self->proc_id == 0)
                return;
        params = cJSON_CreateObject ();
        cJSON_AddNumberToObject (params, "proc", (double) self->proc_id);
        cJSON_AddNumberToObject (params, "signal", signum);
        _corral_agent_call_ignore (self->client, "exec.kill", params);
}

void
corral_process_resize (CorralProcess *self, guint rows, guint cols)
{
        cJSON *params;

        g_return_if_fail (CORRAL_IS_PROCESS (self));
        if (self->exited || self->proc_id == 0 || rows == 0 || cols == 0)
                return;
        params = cJSON_CreateObject ();
        cJSON_AddNumberToObject (params, "proc", (double) self->proc_id);
        cJSON_AddNumberToObject (params, "rows", MIN (rows, 65535));
        cJSON_AddNumberToObject (params, "cols", MIN (cols, 65535));
        _corral_agent_call_ignore (self->client, "exec.resize", params);
}

void
corral_process_detach (CorralProcess *self)
{
        cJSON *params;

        g_return_if_fail (CORRAL_IS_PROCESS (self));
        if (!self->channel)
                return;
        params = cJSON_CreateObject ();
        cJSON_AddNumberToObject (params, "proc", (double) self->proc_id);
        _corral_agent_call_ignore (self->client, "exec.detach", params);
        /* Frames already on their way are dropped as belonging to an unknown channel. */
        drop_channel (self, FALSE);
        g_queue_clear_full (&self->held, (GDestroyNotify) held_chunk_free);
        self->exit_pending = FALSE;
        g_clear_error (&self->error);
        self->error = g_error_new_literal (G_IO_ERROR, G_IO_ERROR_CANCELLED,
                                           _ ("The process was detached"));
        complete_waiters (self);
}

/* Getters -------------------------------------------------------------------------------------- */

guint64
corral_process_get_id (CorralProcess *self)
{
        g_return_val_if_fail (CORRAL_IS_PROCESS (self), 0);
        return self->proc_id;
}

gint64
corral_process_get_pid (CorralProcess *self)
{
        g_return_val_if_fail (CORRAL_IS_PROCESS (self), 0);
        return self->pid;
}

gboolean
corral_process_get_exited (CorralProcess *self)
{
        g_return_val_if_fail (CORRAL_IS_PROCESS (self), FALSE);
        return self->exited;
}

int
corral_process_get_exit_code (CorralProcess *self)
{
        g_return_val_if_fail (CORRAL_IS_PROCESS (self), -1);
        return self->exited ? self->exit_code : -1;
}

int
corral_process_get_term_signal (CorralProcess *self)
{
        g_return_val_if_fail (CORRAL_IS_PROCESS (self), 0);
        return self->exited ? self->term_signal : 0;
}

gboolean
corral_process_get_timed_out (CorralProcess *self)
{
        g_return_val_if_fail (CORRAL_IS_PROCESS (self), FALSE);
        return self->exited && self->timed_out;
}

const char *const *
corral_process_get_refused_calls (CorralProcess *self)
{
        g_return_val_if_fail (CORRAL_IS_PROCESS (self), NULL);
        return self->exited ? (const char *const *) self->refused : NULL;
}

/* Spawn and attach ------------------------------------------------------------------------------ */

static void
started_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        CorralProcess *proc = g_task_get_task_data (task);
        g_autoptr (GError) error = NULL;
        g_autoptr (cJSON) reply = NULL;
        int64_t id = (int64_t) proc->proc_id, pid = 0;

        reply = corral_agent_client_call_finish (CORRAL_AGENT_CLIENT (source), result, &error);
        if (reply &&
            (proto_json_get_int (reply, "proc", 1, (int64_t) PROTO_MAX_ID, &id) == -EINVAL ||
             (proc->proc_id == 0 && id == 0) ||
             proto_json_get_int (reply, "pid", 0, G_MAXINT32, &pid) == -EINVAL))
                error = g_error_new_literal (CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_PROTOCOL,
                                             _ ("The guest agent sent a malformed exec result"));
        if (error) {
                drop_channel (proc, TRUE);
                g_task_return_error (task, g_steal_pointer (&error));
                return;
        }
        proc->proc_id = (guint64) id;
        proc->pid = pid;
        g_task_return_pointer (task, g_object_ref (proc), g_object_unref);
}

static void
start (CorralAgentClient *self,
       const char *method,
       CorralExecSpec *spec,
       guint64 proc_id,
       GTask *task)
{
        g_autoptr (CorralProcess) proc = g_object_new (CORRAL_TYPE_PROCESS, NULL);
        g_autoptr (GError) error = NULL;
        cJSON *params;

        proc->client = g_object_ref (self);
        proc->proc_id = proc_id;
        proc->channel = corral_channel_open (self, &process_funcs, proc, &error);
        if (!proc->channel) {
                g_task_return_error (task, g_steal_pointer (&error));
                g_object_unref (task);
                return;
        }
        if (spec) {
                params = _corral_exec_spec_to_json (spec, corral_channel_get_id (proc->channel),
                                                    &error);
        } else {
                params = cJSON_CreateObject ();
                cJSON_AddNumberToObject (params, "proc", (double) proc_id);
                cJSON_AddNumberToObject (params, "channel", corral_channel_get_id (proc->channel));
        }
        if (!params) {
                drop_channel (proc, FALSE);
                g_task_return_error (task, g_steal_pointer (&error));
                g_object_unref (task);
                return;
        }
        g_task_set_task_data (task, g_steal_pointer (&proc), g_object_unref);
        corral_agent_client_call_async (self, method, params, g_task_get_cancellable (task),
                                        started_cb, task);
}

void
corral_agent_client_spawn_async (CorralAgentClient *self,
                                 CorralExecSpec *spec,
                                 GCancellable *cancellable,
                                 GAsyncReadyCallback callback,
                                 gpointer user_data)
{
        GTask *task;

        g_return_if_fail (CORRAL_IS_AGENT_CLIENT (self));
        g_return_if_fail (spec != NULL);
        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_source_tag (task, corral_agent_client_spawn_async);
        start (self, "exec.start", spec, 0, task);
}

void
corral_agent_client_attach_async (CorralAgentClient *self,
                                  guint64 proc_id,
                                  GCancellable *cancellable,
                                  GAsyncReadyCallback callback,
                                  gpointer user_data)
{
        GTask *task;

        g_return_if_fail (CORRAL_IS_AGENT_CLIENT (self));
        g_return_if_fail (proc_id > 0 && proc_id <= (guint64) PROTO_MAX_ID);
        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_source_tag (task, corral_agent_client_attach_async);
        start (self, "exec.attach", NULL, proc_id, task);
}

static CorralProcess *
start_finish (CorralAgentClient *self, GAsyncResult *result, GError **error)
{
        CorralProcess *proc;

        g_return_val_if_fail (g_task_is_valid (result, self), NULL);
        proc = g_task_propagate_pointer (G_TASK (result), error);
        if (proc)
                set_ready (proc);
        return proc;
}

CorralProcess *
corral_agent_client_spawn_finish (CorralAgentClient *self, GAsyncResult *result, GError **error)
{
        return start_finish (self, result, error);
}

CorralProcess *
corral_agent_client_attach_finish (CorralAgentClient *self, GAsyncResult *result, GError **error)
{
        return start_finish (self, result, error);
}
