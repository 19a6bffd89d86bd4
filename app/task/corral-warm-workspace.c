/* corral-warm-workspace.c — see corral-warm-workspace.h.
 *
 * One preparation at a time (Prep): the values it is for, the image once verified, the pool
 * once made, and whether a step (the image check or build, the pool's boot) is in flight.
 * Waiters (starts) are answered when no step is; a release waits for that too, so that a boot
 * in flight has removed its VM before the app leaves.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-warm-workspace.h"

typedef struct {
        char *image_name;
        guint memory_mib;
        guint vcpus;
        GCancellable *cancellable;
        CorralImage *image; /* verified */
        CorralVmPool *pool; /* diskless images only */
        gboolean busy; /* the image step or a fill in flight */
        gboolean building; /* the builder reported a step: it is not only a check */
        GPtrArray *waiters; /* GTask, answered when not busy */
        GPtrArray *releases; /* GTask, answered once the pool's VM is gone */
} Prep;

struct _CorralWarmWorkspace {
        GObject parent_instance;

        CorralVmManager *manager;
        Prep *prep; /* nullable; a reference */
};

G_DEFINE_FINAL_TYPE (CorralWarmWorkspace, corral_warm_workspace, G_TYPE_OBJECT)

static void
prep_clear (Prep *p)
{
        g_free (p->image_name);
        g_clear_object (&p->cancellable);
        corral_image_free (p->image);
        g_clear_object (&p->pool);
        g_ptr_array_unref (p->waiters);
        g_ptr_array_unref (p->releases);
}

static Prep *
prep_ref (Prep *p)
{
        return g_rc_box_acquire (p);
}

static void
prep_unref (Prep *p)
{
        g_rc_box_release_full (p, (GDestroyNotify) prep_clear);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (Prep, prep_unref)

static Prep *
prep_new (const char *image, guint memory_mib, guint vcpus)
{
        Prep *p = g_rc_box_new0 (Prep);

        p->image_name = g_strdup (image);
        p->memory_mib = memory_mib;
        p->vcpus = vcpus;
        p->cancellable = g_cancellable_new ();
        p->waiters = g_ptr_array_new ();
        p->releases = g_ptr_array_new ();
        return p;
}

/* A start waiting: its progress function, and the preparation it waits for. */
typedef struct {
        CorralLaunchProgressFunc progress;
        gpointer progress_data;
        gulong cancelled_id;
        Prep *prep; /* nullable: none was made for its values */
} Waiter;

static void
waiter_free (Waiter *w)
{
        g_clear_pointer (&w->prep, prep_unref);
        g_free (w);
}

static gboolean
prep_is_for (const Prep *p, const char *image, guint memory_mib, guint vcpus)
{
        return p && g_strcmp0 (p->image_name, image) == 0 && p->memory_mib == memory_mib &&
               p->vcpus == vcpus;
}

static void
tell_waiters (Prep *p, CorralLaunchStage stage, double fraction, const char *detail)
{
        for (guint i = 0; i < p->waiters->len; i++) {
                Waiter *w = g_task_get_task_data (p->waiters->pdata[i]);

                if (w->progress)
                        w->progress (stage, fraction, detail, w->progress_data);
        }
}

static void
answer_waiter (GTask *task)
{
        Waiter *w = g_task_get_task_data (task);
        GCancellable *cancellable = g_task_get_cancellable (task);

        if (w->cancelled_id)
                g_cancellable_disconnect (cancellable, w->cancelled_id);
        w->cancelled_id = 0;
        g_task_return_boolean (task, TRUE);
        g_object_unref (task);
}

static void release_pool (Prep *p);

/* No step in flight: every waiter hears the outcome, a release removes what is left. */
static void
settle (Prep *p)
{
        g_autoptr (GPtrArray) waiters = g_steal_pointer (&p->waiters);

        p->busy = FALSE;
        p->waiters = g_ptr_array_new ();
        for (guint i = 0; i < waiters->len; i++)
                answer_waiter (waiters->pdata[i]);
        if (p->releases->len > 0)
                release_pool (p);
}

/* Releasing ----------------------------------------------------------------------------------- */

static void
on_pool_released (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (Prep) p = user_data;
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) releases = g_steal_pointer (&p->releases);

        p->releases = g_ptr_array_new ();
        if (!corral_vm_pool_release_finish (CORRAL_VM_POOL (source), res, NULL, &error))
                g_warning ("Could not remove the workspace made ready ahead: %s", error->message);
        for (guint i = 0; i < releases->len; i++) {
                g_task_return_boolean (releases->pdata[i], TRUE);
                g_object_unref (releases->pdata[i]);
        }
}

static void
release_pool (Prep *p)
{
        if (!p->pool) {
                g_autoptr (GPtrArray) releases = g_steal_pointer (&p->releases);

                p->releases = g_ptr_array_new ();
                for (guint i = 0; i < releases->len; i++) {
                        g_task_return_boolean (releases->pdata[i], TRUE);
                        g_object_unref (releases->pdata[i]);
                }
                return;
        }
        corral_vm_pool_release_async (p->pool, NULL, on_pool_released, prep_ref (p));
}

/* Stops p and removes its VM; task (nullable) is answered once that is done. */
static void
abandon (Prep *p, GTask *task)
{
        g_cancellable_cancel (p->cancellable);
        g_ptr_array_add (p->releases, task ? task : g_task_new (NULL, NULL, NULL, NULL));
        if (!p->busy)
                release_pool (p);
}

/* Booting ------------------------------------------------------------------------------------- */

static void
on_filled (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (Prep) p = user_data;
        g_autoptr (GError) error = NULL;

        if (!corral_vm_pool_fill_finish (CORRAL_VM_POOL (source), res, NULL, &error) &&
            !g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                g_message ("The workspace made ready ahead did not start: %s", error->message);
        settle (p);
}

static void
fill (CorralWarmWorkspace *self, Prep *p)
{
        if (!p->pool) {
                const CorralVmSpec spec = { .memory_mib = p->memory_mib,
                                            .vcpus = p->vcpus,
                                            .kernel = p->image->kernel,
                                            .initrd = p->image->initrd,
                                            .cmdline = p->image->cmdline,
                                            .image_name = p->image->name,
                                            .manifest_sha256 = p->image->manifest_sha256 };

                p->pool = corral_vm_pool_new (self->manager, &spec);
                corral_vm_pool_set_take_own (p->pool, TRUE);
        }
        p->busy = TRUE;
        tell_waiters (p, CORRAL_LAUNCH_STAGE_BOOT, -1.0, NULL);
        corral_vm_pool_fill_async (p->pool, 1, p->cancellable, on_filled, prep_ref (p));
}

/* The image ----------------------------------------------------------------------------------- */

typedef struct {
        CorralWarmWorkspace *self; /* a reference */
        Prep *prep; /* a reference */
} Step;

static void
step_free (Step *s)
{
        g_object_unref (s->self);
        prep_unref (s->prep);
        g_free (s);
}

static void
on_image_progress (double fraction, const char *text, gpointer user_data)
{
        Prep *p = ((Step *) user_data)->prep;

        p->building = TRUE;
        tell_waiters (p, CORRAL_LAUNCH_STAGE_IMAGE, fraction, text);
}

static void
on_image_built (GObject *source, GAsyncResult *res, gpointer user_data)
{
        Step *s = user_data;
        Prep *p = s->prep;
        g_autoptr (GError) error = NULL;

        p->image = corral_image_build_finish (res, &error);
        if (!p->image) {
                if (!g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                        g_message ("The workspace image was not made ready ahead: %s",
                                   error->message);
                settle (p);
        } else if (p->image->disk || g_cancellable_is_cancelled (p->cancellable)) {
                settle (p);
        } else {
                fill (s->self, p);
        }
        step_free (s);
}

static void
check_image (CorralWarmWorkspace *self, Prep *p)
{
        Step *s = g_new0 (Step, 1);

        s->self = g_object_ref (self);
        s->prep = prep_ref (p);
        p->busy = TRUE;
        p->building = FALSE;
        /* NULL: the agent from corral_paths_helper, as corral_task_create_async builds it. */
        corral_image_build_async (p->image_name, NULL, on_image_progress, s, p->cancellable,
                                  on_image_built, s);
}

/* Public -------------------------------------------------------------------------------------- */

void
corral_warm_workspace_prepare (CorralWarmWorkspace *self,
                               const char *image,
                               guint memory_mib,
                               guint vcpus)
{
        Prep *p;

        g_return_if_fail (CORRAL_IS_WARM_WORKSPACE (self));
        g_return_if_fail (image != NULL);

        if (!prep_is_for (self->prep, image, memory_mib, vcpus)) {
                if (self->prep) {
                        abandon (self->prep, NULL);
                        prep_unref (self->prep);
                }
                self->prep = prep_new (image, memory_mib, vcpus);
        }
        p = self->prep;
        if (p->busy)
                return;
        if (!p->image)
                check_image (self, p); /* first, or after a failure */
        else if (!p->image->disk && corral_vm_pool_get_n_ready (p->pool) == 0)
                fill (self, p); /* the last one was taken */
}

static void
on_waiter_cancelled (GCancellable *cancellable, gpointer user_data)
{
        GTask *task = user_data;
        Waiter *w = g_task_get_task_data (task);

        /* Signalled on the thread that cancelled; the app cancels on its main thread. */
        w->cancelled_id = 0;
        if (g_ptr_array_remove (w->prep->waiters, task)) {
                g_task_return_error_if_cancelled (task);
                g_object_unref (task);
        }
}

void
corral_warm_workspace_wait_async (CorralWarmWorkspace *self,
                                  const char *image,
                                  guint memory_mib,
                                  guint vcpus,
                                  CorralLaunchProgressFunc progress,
                                  gpointer progress_data,
                                  GCancellable *cancellable,
                                  GAsyncReadyCallback callback,
                                  gpointer user_data)
{
        GTask *task;
        Waiter *w;

        g_return_if_fail (CORRAL_IS_WARM_WORKSPACE (self));
        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_source_tag (task, corral_warm_workspace_wait_async);
        g_task_set_check_cancellable (task, TRUE);
        w = g_new0 (Waiter, 1);
        w->progress = progress;
        w->progress_data = progress_data;
        if (prep_is_for (self->prep, image, memory_mib, vcpus))
                w->prep = prep_ref (self->prep);
        g_task_set_task_data (task, w, (GDestroyNotify) waiter_free);
        if (!w->prep || !w->prep->busy || g_cancellable_is_cancelled (cancellable)) {
                g_task_return_boolean (task, TRUE);
                g_object_unref (task);
                return;
        }
        g_ptr_array_add (w->prep->waiters, task);
        if (w->prep->building && progress)
                progress (CORRAL_LAUNCH_STAGE_IMAGE, -1.0, NULL, progress_data);
        if (cancellable)
                w->cancelled_id = g_cancellable_connect (
                        cancellable, G_CALLBACK (on_waiter_cancelled), task, NULL);
}

gboolean
corral_warm_workspace_wait_finish (CorralWarmWorkspace *self,
                                   GAsyncResult *result,
                                   CorralImage **ret_built,
                                   CorralVmPool **ret_pool,
                                   GError **error)
{
        g_autoptr (GError) local = NULL;
        Waiter *w;

        g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
        g_return_val_if_fail (ret_built != NULL && ret_pool != NULL, FALSE);

        *ret_built = NULL;
        *ret_pool = NULL;
        if (!g_task_propagate_boolean (G_TASK (result), error))
                return FALSE;
        w = g_task_get_task_data (G_TASK (result));
        /* A preparation replaced meanwhile (other values) was cancelled: nothing from it. */
        if (!w->prep || !w->prep->image || g_cancellable_is_cancelled (w->prep->cancellable))
                return TRUE;
        /* Checked ahead, maybe long ago: still the files verified, still trusted (a changed
         * one is left to the start, which verifies it in full and says what is wrong). */
        if (!corral_image_recheck (w->prep->image, &local)) {
                g_message ("The workspace image made ready ahead is not used: %s", local->message);
                g_clear_pointer (&w->prep->image, corral_image_free);
                return TRUE;
        }
        *ret_built = corral_image_copy (w->prep->image);
        if (w->prep->pool && corral_vm_pool_get_n_ready (w->prep->pool) > 0)
                *ret_pool = g_object_ref (w->prep->pool);
        return TRUE;
}

void
corral_warm_workspace_release_async (CorralWarmWorkspace *self,
                                     GCancellable *cancellable,
                                     GAsyncReadyCallback callback,
                                     gpointer user_data)
{
        GTask *task;

        g_return_if_fail (CORRAL_IS_WARM_WORKSPACE (self));
        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_source_tag (task, corral_warm_workspace_release_async);
        if (!self->prep) {
                g_task_return_boolean (task, TRUE);
                g_object_unref (task);
                return;
        }
        abandon (self->prep, task);
        g_clear_pointer (&self->prep, prep_unref);
}

gboolean
corral_warm_workspace_release_finish (CorralWarmWorkspace *self,
                                      GAsyncResult *result,
                                      GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
        return g_task_propagate_boolean (G_TASK (result), error);
}

static void
corral_warm_workspace_dispose (GObject *object)
{
        CorralWarmWorkspace *self = CORRAL_WARM_WORKSPACE (object);

        /* Not released (a test, or a crash path): its boot stops; an idle VM stays, for
         * `corralctl vm pool drain` or gc. */
        if (self->prep)
                g_cancellable_cancel (self->prep->cancellable);
        g_clear_pointer (&self->prep, prep_unref);
        g_clear_object (&self->manager);
        G_OBJECT_CLASS (corral_warm_workspace_parent_class)->dispose (object);
}

static void
corral_warm_workspace_class_init (CorralWarmWorkspaceClass *klass)
{
        G_OBJECT_CLASS (klass)->dispose = corral_warm_workspace_dispose;
}

static void
corral_warm_workspace_init (CorralWarmWorkspace *self)
{
}

CorralWarmWorkspace *
corral_warm_workspace_new (CorralVmManager *manager)
{
        CorralWarmWorkspace *self = g_object_new (CORRAL_TYPE_WARM_WORKSPACE, NULL);

        self->manager = g_object_ref (manager);
        return self;
}
