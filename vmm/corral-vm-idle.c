/* corral-vm-idle.c — idle auto-suspend with wake-on-request (see the header).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-vm-idle.h"

typedef enum {
        IDLE_RUNNING,
        IDLE_SUSPENDING,
        IDLE_PAUSED,
        IDLE_RESUMING,
} IdleState;

enum { SIGNAL_PAUSED, SIGNAL_RESUMED, N_SIGNALS };
static guint signals[N_SIGNALS];

struct _CorralVmIdle {
        GObject parent_instance;
        CorralVmManager *manager;
        CorralAgentClient *client;
        char *vm_name;
        guint timeout_ms;
        IdleState state;
        guint holds;
        guint timer_id;
        guint n_suspends;
        GQueue waiters; /* of GTask: acquires waiting for a resume */
};

G_DEFINE_FINAL_TYPE (CorralVmIdle, corral_vm_idle, G_TYPE_OBJECT)

static void
corral_vm_idle_dispose (GObject *object)
{
        CorralVmIdle *self = CORRAL_VM_IDLE (object);

        g_clear_handle_id (&self->timer_id, g_source_remove);
        /* A VM left paused stays paused: the next owner's acquire (or `vm resume`) wakes it. */
        if (self->client && self->state == IDLE_RUNNING)
                corral_agent_client_set_heartbeat_paused (self->client, FALSE);
        g_clear_object (&self->client);
        g_clear_object (&self->manager);
        G_OBJECT_CLASS (corral_vm_idle_parent_class)->dispose (object);
}

static void
corral_vm_idle_finalize (GObject *object)
{
        CorralVmIdle *self = CORRAL_VM_IDLE (object);

        g_free (self->vm_name);
        G_OBJECT_CLASS (corral_vm_idle_parent_class)->finalize (object);
}

static void
corral_vm_idle_class_init (CorralVmIdleClass *klass)
{
        GObjectClass *object_class = G_OBJECT_CLASS (klass);

        object_class->dispose = corral_vm_idle_dispose;
        object_class->finalize = corral_vm_idle_finalize;
        signals[SIGNAL_PAUSED] =
                g_signal_new ("paused", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                              NULL, G_TYPE_NONE, 0);
        signals[SIGNAL_RESUMED] =
                g_signal_new ("resumed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL,
                              NULL, NULL, G_TYPE_NONE, 0);
}

static void
corral_vm_idle_init (CorralVmIdle *self)
{
        g_queue_init (&self->waiters);
}

static void arm_timer (CorralVmIdle *self);

CorralVmIdle *
corral_vm_idle_new (CorralVmManager *manager,
                    const char *vm_name,
                    CorralAgentClient *client,
                    guint timeout_ms)
{
        CorralVmIdle *self;

        g_return_val_if_fail (CORRAL_IS_VM_MANAGER (manager), NULL);
        g_return_val_if_fail (vm_name && CORRAL_IS_AGENT_CLIENT (client), NULL);
        self = g_object_new (CORRAL_TYPE_VM_IDLE, NULL);
        self->manager = g_object_ref (manager);
        self->client = g_object_ref (client);
        self->vm_name = g_strdup (vm_name);
        self->timeout_ms = timeout_ms;
        arm_timer (self);
        return self;
}

void
corral_vm_idle_set_timeout (CorralVmIdle *self, guint timeout_ms)
{
        g_return_if_fail (CORRAL_IS_VM_IDLE (self));
        self->timeout_ms = timeout_ms;
        arm_timer (self);
}

guint
corral_vm_idle_get_timeout (CorralVmIdle *self)
{
        g_return_val_if_fail (CORRAL_IS_VM_IDLE (self), 0);
        return self->timeout_ms;
}

gboolean
corral_vm_idle_get_paused (CorralVmIdle *self)
{
        g_return_val_if_fail (CORRAL_IS_VM_IDLE (self), FALSE);
        return self->state != IDLE_RUNNING;
}

guint
corral_vm_idle_get_n_suspends (CorralVmIdle *self)
{
        g_return_val_if_fail (CORRAL_IS_VM_IDLE (self), 0);
        return self->n_suspends;
}

/* The state machine --------------------------------------------------------------------------- */

static void start_resume (CorralVmIdle *self);

static void
suspend_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (CorralVmIdle) self = user_data;
        g_autoptr (GError) error = NULL;

        if (!corral_vm_manager_op_finish (CORRAL_VM_MANAGER (source), result, &error)) {
                g_warning ("idle suspend of VM “%s” failed: %s", self->vm_name, error->message);
                self->state = IDLE_RUNNING;
                corral_agent_client_set_heartbeat_paused (self->client, FALSE);
                if (g_queue_is_empty (&self->waiters)) {
                        arm_timer (self);
                        return;
                }
                /* Requests came in meanwhile: the VM runs, let them through. */
                self->state = IDLE_PAUSED;
                start_resume (self);
                return;
        }
        self->state = IDLE_PAUSED;
        self->n_suspends++;
        g_debug ("VM “%s” suspended after %u ms idle", self->vm_name, self->timeout_ms);
        g_signal_emit (self, signals[SIGNAL_PAUSED], 0);
        if (!g_queue_is_empty (&self->waiters))
                start_resume (self);
}

static void
start_suspend (CorralVmIdle *self)
{
        if (self->state != IDLE_RUNNING || self->holds > 0)
                return;
        g_clear_handle_id (&self->timer_id, g_source_remove);
        self->state = IDLE_SUSPENDING;
        /* Before the guest stops answering. */
        corral_agent_client_set_heartbeat_paused (self->client, TRUE);
        corral_vm_manager_op_async (self->manager, self->vm_name, CORRAL_VM_OP_PAUSE, NULL,
                                    suspend_done, g_object_ref (self));
}

static void
resume_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (CorralVmIdle) self = user_data;
        g_autoptr (GError) error = NULL;
        GTask *waiter;

        if (!corral_vm_manager_op_finish (CORRAL_VM_MANAGER (source), result, &error) &&
            !g_error_matches (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_INVALID_STATE)) {
                /* Still paused; every waiter fails and holds nothing. */
                self->state = IDLE_PAUSED;
                while ((waiter = g_queue_pop_head (&self->waiters))) {
                        self->holds--;
                        g_task_return_error (waiter, g_error_copy (error));
                        g_object_unref (waiter);
                }
                return;
        }
        /* INVALID_STATE: someone resumed it already (`corralctl vm resume`); it runs. */
        self->state = IDLE_RUNNING;
        corral_agent_client_set_heartbeat_paused (self->client, FALSE);
        g_signal_emit (self, signals[SIGNAL_RESUMED], 0);
        while ((waiter = g_queue_pop_head (&self->waiters))) {
                g_task_return_boolean (waiter, TRUE);
                g_object_unref (waiter);
        }
        arm_timer (self);
}

static void
start_resume (CorralVmIdle *self)
{
        if (self->state != IDLE_PAUSED)
                return;
        self->state = IDLE_RESUMING;
        corral_vm_manager_op_async (self->manager, self->vm_name, CORRAL_VM_OP_RESUME, NULL,
                                    resume_done, g_object_ref (self));
}

static gboolean
idle_timeout_cb (gpointer user_data)
{
        CorralVmIdle *self = user_data;

        self->timer_id = 0;
        start_suspend (self);
        return G_SOURCE_REMOVE;
}

static void
arm_timer (CorralVmIdle *self)
{
        g_clear_handle_id (&self->timer_id, g_source_remove);
        if (self->timeout_ms == 0 || self->holds > 0 || self->state != IDLE_RUNNING)
                return;
        self->timer_id = g_timeout_add (self->timeout_ms, idle_timeout_cb, self);
}

void
corral_vm_idle_suspend_now (CorralVmIdle *self)
{
        g_return_if_fail (CORRAL_IS_VM_IDLE (self));
        start_suspend (self);
}

void
corral_vm_idle_acquire_async (CorralVmIdle *self,
                              GCancellable *cancellable,
                              GAsyncReadyCallback callback,
                              gpointer user_data)
{
        GTask *task;

        g_return_if_fail (CORRAL_IS_VM_IDLE (self));
        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_source_tag (task, corral_vm_idle_acquire_async);
        self->holds++;
        g_clear_handle_id (&self->timer_id, g_source_remove);
        if (self->state == IDLE_RUNNING) {
                g_task_return_boolean (task, TRUE);
                g_object_unref (task);
                return;
        }
        g_queue_push_tail (&self->waiters, task);
        start_resume (self); /* no-op unless PAUSED; SUSPENDING resumes when done */
}

gboolean
corral_vm_idle_acquire_finish (CorralVmIdle *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
        return g_task_propagate_boolean (G_TASK (result), error);
}

void
corral_vm_idle_release (CorralVmIdle *self)
{
        g_return_if_fail (CORRAL_IS_VM_IDLE (self));
        g_return_if_fail (self->holds > 0);
        if (--self->holds == 0)
                arm_timer (self);
}

/* Wrappers ------------------------------------------------------------------------------------ */

typedef struct {
        char *method;
        cJSON *params;
        CorralExecSpec *spec;
        gsize max_output;
} RequestData;

static void
request_data_free (RequestData *d)
{
        g_free (d->method);
        if (d->params)
                cJSON_Delete (d->params);
        g_clear_pointer (&d->spec, corral_exec_spec_unref);
        g_free (d);
}

static void
call_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
        GTask *task = user_data;
        CorralVmIdle *self = g_task_get_source_object (task);
        GError *error = NULL;
        cJSON *reply =
                corral_agent_client_call_finish (CORRAL_AGENT_CLIENT (source), result, &error);

        corral_vm_idle_release (self);
        if (reply)
                g_task_return_pointer (task, reply, (GDestroyNotify) cJSON_Delete);
        else
                g_task_return_error (task, error);
        g_object_unref (task);
}

static void
run_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
        GTask *task = user_data;
        CorralVmIdle *self = g_task_get_source_object (task);
        GError *error = NULL;
        CorralRunResult *r =
                corral_agent_client_run_finish (CORRAL_AGENT_CLIENT (source), result, &error);

        corral_vm_idle_release (self);
        if (r)
                g_task_return_pointer (task, r, (GDestroyNotify) corral_run_result_free);
        else
                g_task_return_error (task, error);
        g_object_unref (task);
}

static void
request_acquired (GObject *source, GAsyncResult *result, gpointer user_data)
{
        GTask *task = user_data;
        CorralVmIdle *self = CORRAL_VM_IDLE (source);
        RequestData *d = g_task_get_task_data (task);
        GError *error = NULL;

        if (!corral_vm_idle_acquire_finish (self, result, &error)) {
                g_task_return_error (task, error);
                g_object_unref (task);
                return;
        }
        if (d->spec)
                corral_agent_client_run_async (self->client, d->spec, d->max_output,
                                               g_task_get_cancellable (task), run_done, task);
        else
                corral_agent_client_call_async (self->client, d->method,
                                                g_steal_pointer (&d->params),
                                                g_task_get_cancellable (task), call_done, task);
}

void
corral_vm_idle_call_async (CorralVmIdle *self,
                           const char *method,
                           cJSON *params,
                           GCancellable *cancellable,
                           GAsyncReadyCallback callback,
                           gpointer user_data)
{
        GTask *task;
        RequestData *d = g_new0 (RequestData, 1);

        g_return_if_fail (CORRAL_IS_VM_IDLE (self) && method);
        d->method = g_strdup (method);
        d->params = params;
        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_task_data (task, d, (GDestroyNotify) request_data_free);
        corral_vm_idle_acquire_async (self, cancellable, request_acquired, task);
}

cJSON *
corral_vm_idle_call_finish (CorralVmIdle *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), NULL);
        return g_task_propagate_pointer (G_TASK (result), error);
}

void
corral_vm_idle_run_async (CorralVmIdle *self,
                          CorralExecSpec *spec,
                          gsize max_output,
                          GCancellable *cancellable,
                          GAsyncReadyCallback callback,
                          gpointer user_data)
{
        GTask *task;
        RequestData *d = g_new0 (RequestData, 1);

        g_return_if_fail (CORRAL_IS_VM_IDLE (self) && spec);
        d->spec = corral_exec_spec_ref (spec);
        d->max_output = max_output;
        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_task_data (task, d, (GDestroyNotify) request_data_free);
        corral_vm_idle_acquire_async (self, cancellable, request_acquired, task);
}

CorralRunResult *
corral_vm_idle_run_finish (CorralVmIdle *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), NULL);
        return g_task_propagate_pointer (G_TASK (result), error);
}
