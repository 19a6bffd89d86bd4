/* corral-vm-pool.c — the warm pool (see the header).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-vm-pool.h"
#include "corral-vm-pool-record.h"
#include "corral-vm-private.h"

#include "corral-exec-spec.h"
#include "corral-glib-compat.h"
#include "corral-process.h"

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <string.h>

#define BOOT_TIMEOUT_MS 120000
/* Connecting to an idle VM booted by another process: its agent is up, this is one HELLO. */
#define ADOPT_TIMEOUT_MS 30000
/* After a handout, the replacement boot waits this long: under TCG a boot takes the host's
 * CPUs, and the session's first requests should not compete with it. */
#define REFILL_DELAY_MS 1000

G_DEFINE_AUTOPTR_CLEANUP_FUNC (virDomain, virDomainFree)

enum { SIGNAL_VM_READY, SIGNAL_BOOT_FAILED, N_SIGNALS };
static guint signals[N_SIGNALS];

typedef struct {
        char *name;
        CorralAgentClient *client;
} ReadyVm;

static void
ready_vm_free (ReadyVm *r)
{
        if (!r)
                return;
        g_free (r->name);
        g_clear_object (&r->client);
        g_free (r);
}

struct _CorralVmPool {
        GObject parent_instance;
        CorralVmManager *manager;
        CorralVmSpec spec; /* owned strings; name unused */
        guint size;
        GQueue ready; /* of ReadyVm, oldest first */
        guint n_booting;
        guint refill_id; /* the delayed refill after a handout */
        GHashTable *booting; /* names of this object's boots in flight; drain leaves them */
        gboolean refill_failed; /* stop retrying background boots after a failure */
        GCancellable *cancellable; /* background boots; replaced by drain */
        gboolean take_own; /* take and fill count only the VMs this object booted */
        GMutex take_lock; /* threads: picking an idle VM and marking it taken */
};

G_DEFINE_FINAL_TYPE (CorralVmPool, corral_vm_pool, G_TYPE_OBJECT)

void
corral_vm_pool_entry_free (CorralVmPoolEntry *entry)
{
        if (!entry)
                return;
        g_free (entry->name);
        g_free (entry->alias);
        g_free (entry);
}

static void
corral_vm_pool_dispose (GObject *object)
{
        CorralVmPool *self = CORRAL_VM_POOL (object);
        ReadyVm *r;

        g_clear_handle_id (&self->refill_id, g_source_remove);
        if (self->cancellable)
                g_cancellable_cancel (self->cancellable);
        /* Idle VMs stay idle in libvirt: another pool object (or process) can take them. */
        while ((r = g_queue_pop_head (&self->ready))) {
                corral_agent_client_close (r->client);
                ready_vm_free (r);
        }
        G_OBJECT_CLASS (corral_vm_pool_parent_class)->dispose (object);
}

static void
corral_vm_pool_finalize (GObject *object)
{
        CorralVmPool *self = CORRAL_VM_POOL (object);

        g_clear_object (&self->cancellable);
        g_clear_object (&self->manager);
        g_hash_table_unref (self->booting);
        g_free ((char *) self->spec.kernel);
        g_free ((char *) self->spec.initrd);
        g_free ((char *) self->spec.cmdline);
        g_free ((char *) self->spec.image_name);
        g_free ((char *) self->spec.manifest_sha256);
        g_free ((char *) self->spec.disk);
        g_mutex_clear (&self->take_lock);
        G_OBJECT_CLASS (corral_vm_pool_parent_class)->finalize (object);
}

static void
corral_vm_pool_class_init (CorralVmPoolClass *klass)
{
        GObjectClass *object_class = G_OBJECT_CLASS (klass);

        object_class->dispose = corral_vm_pool_dispose;
        object_class->finalize = corral_vm_pool_finalize;
        signals[SIGNAL_VM_READY] =
                g_signal_new ("vm-ready", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL,
                              NULL, NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
        signals[SIGNAL_BOOT_FAILED] =
                g_signal_new ("boot-failed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL,
                              NULL, NULL, G_TYPE_NONE, 1, G_TYPE_ERROR);
}

static void
corral_vm_pool_init (CorralVmPool *self)
{
        g_queue_init (&self->ready);
        self->booting = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
        g_mutex_init (&self->take_lock);
        self->cancellable = g_cancellable_new ();
}

CorralVmPool *
corral_vm_pool_new (CorralVmManager *manager, const CorralVmSpec *spec)
{
        CorralVmPool *self;

        g_return_val_if_fail (CORRAL_IS_VM_MANAGER (manager), NULL);
        g_return_val_if_fail (!spec || (spec->kernel && spec->initrd && spec->image_name), NULL);
        self = g_object_new (CORRAL_TYPE_VM_POOL, NULL);
        self->manager = g_object_ref (manager);
        if (!spec)
                return self;
        self->spec = *spec;
        self->spec.name = NULL;
        self->spec.kernel = g_strdup (spec->kernel);
        self->spec.initrd = g_strdup (spec->initrd);
        self->spec.cmdline = g_strdup (spec->cmdline);
        self->spec.image_name = g_strdup (spec->image_name);
        self->spec.manifest_sha256 = g_strdup (spec->manifest_sha256);
        self->spec.disk = g_strdup (spec->disk);
        return self;
}

guint
corral_vm_pool_get_size (CorralVmPool *self)
{
        g_return_val_if_fail (CORRAL_IS_VM_POOL (self), 0);
        return self->size;
}

guint
corral_vm_pool_get_n_ready (CorralVmPool *self)
{
        g_return_val_if_fail (CORRAL_IS_VM_POOL (self), 0);
        return self->ready.length;
}

guint
corral_vm_pool_get_n_booting (CorralVmPool *self)
{
        g_return_val_if_fail (CORRAL_IS_VM_POOL (self), 0);
        return self->n_booting;
}

/* libvirt side (threads) ---------------------------------------------------------------------- */

static int
compare_entry (gconstpointer a, gconstpointer b)
{
        return strcmp ((*(CorralVmPoolEntry *const *) a)->name,
                       (*(CorralVmPoolEntry *const *) b)->name);
}

static GPtrArray *
list_entries (virConnectPtr conn, GError **error)
{
        g_autoptr (GPtrArray) doms = _corral_pool_list_domains (conn, error);
        GPtrArray *out;

        if (!doms)
                return NULL;
        out = g_ptr_array_new_with_free_func ((GDestroyNotify) corral_vm_pool_entry_free);
        for (guint i = 0; i < doms->len; i++) {
                CorralVmPoolEntry *e = g_new0 (CorralVmPoolEntry, 1);
                CorralPoolRecord meta;

                _corral_pool_record_read (doms->pdata[i], &meta);
                e->name = g_strdup (virDomainGetName (doms->pdata[i]) +
                                    strlen (CORRAL_DOMAIN_PREFIX));
                e->pool_state = meta.state;
                e->alias = meta.alias;
                e->state = _corral_vm_domain_state (doms->pdata[i]);
                g_ptr_array_add (out, e);
        }
        g_ptr_array_sort (out, compare_entry);
        return out;
}

static void
list_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
        CorralVmPool *self = source;
        GError *error = NULL;
        GPtrArray *entries = list_entries (_corral_vm_manager_get_conn (self->manager), &error);

        if (entries)
                g_task_return_pointer (task, entries, (GDestroyNotify) g_ptr_array_unref);
        else
                g_task_return_error (task, error);
}

void
corral_vm_pool_list_async (CorralVmPool *self,
                           GCancellable *cancellable,
                           GAsyncReadyCallback callback,
                           gpointer user_data)
{
        g_autoptr (GTask) task = NULL;

        g_return_if_fail (CORRAL_IS_VM_POOL (self));
        task = g_task_new (self, cancellable, callback, user_data);
        g_task_run_in_thread (task, list_thread);
}

GPtrArray *
corral_vm_pool_list_finish (CorralVmPool *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), NULL);
        return g_task_propagate_pointer (G_TASK (result), error);
}

/* Booting one pool VM ------------------------------------------------------------------------- */

typedef struct {
        char *name;
        CorralAgentClient *client;
        GError *error; /* the failure, returned once the VM is removed */
} BootData;

static void
boot_data_free (BootData *d)
{
        g_free (d->name);
        g_clear_object (&d->client);
        g_clear_error (&d->error);
        g_free (d);
}

static void
boot_removed (GObject *source, GAsyncResult *result, gpointer user_data)
{
        GTask *task = user_data;
        BootData *d = g_task_get_task_data (task);
        g_autoptr (GError) error = NULL;

        if (!corral_vm_manager_op_finish (CORRAL_VM_MANAGER (source), result, &error) &&
            !g_error_matches (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_NO_SUCH_VM))
                g_warning ("warm pool: could not remove %s: %s", d->name, error->message);
        g_task_return_error (task, g_steal_pointer (&d->error));
        g_object_unref (task);
}

/* Nothing half-booted stays behind; the boot ends once its VM is gone, so that whoever waits
 * for it (a pool released as the app closes) does not leave before the removal. */
static void
boot_fail (GTask *task, GError *error)
{
        CorralVmPool *self = g_task_get_source_object (task);
        BootData *d = g_task_get_task_data (task);

        if (d->client)
                corral_agent_client_close (d->client);
        d->error = error;
        corral_vm_manager_op_async (self->manager, d->name, CORRAL_VM_OP_REMOVE, NULL, boot_removed,
                                    task);
}

static void
mark_idle_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
        CorralVmPool *self = source;
        BootData *d = data;
        g_autofree char *dname = g_strconcat (CORRAL_DOMAIN_PREFIX, d->name, NULL);
        g_autoptr (virDomain) dom =
                virDomainLookupByName (_corral_vm_manager_get_conn (self->manager), dname);
        GError *error = NULL;

        if (!dom)
                _corral_vm_set_libvirt_error (&error, CORRAL_VM_ERROR_FAILED,
                                              "the new pool VM vanished");
        if (dom && _corral_pool_record_write (dom, CORRAL_VM_POOL_IDLE, NULL, &error))
                g_task_return_boolean (task, TRUE);
        else
                g_task_return_error (task, error);
}

static void
boot_marked (GObject *source, GAsyncResult *result, gpointer user_data)
{
        GTask *task = user_data;
        CorralVmPool *self = g_task_get_source_object (task);
        BootData *d = g_task_get_task_data (task);
        GError *error = NULL;
        ReadyVm *r;

        if (!g_task_propagate_boolean (G_TASK (result), &error)) {
                boot_fail (task, error);
                return;
        }
        r = g_new0 (ReadyVm, 1);
        r->name = g_strdup (d->name);
        r->client = g_steal_pointer (&d->client);
        g_queue_push_tail (&self->ready, r);
        g_signal_emit (self, signals[SIGNAL_VM_READY], 0, d->name);
        g_task_return_pointer (task, g_strdup (d->name), g_free);
        g_object_unref (task);
}

static void
boot_warmed (GObject *source, GAsyncResult *result, gpointer user_data)
{
        GTask *task = user_data;
        CorralVmPool *self = g_task_get_source_object (task);
        GError *error = NULL;
        g_autoptr (CorralRunResult) run =
                corral_agent_client_run_finish (CORRAL_AGENT_CLIENT (source), result, &error);
        g_autoptr (GTask) mark = NULL;

        if (!run) {
                boot_fail (task, error);
                return;
        }
        mark = g_task_new (self, g_task_get_cancellable (task), boot_marked, task);
        g_task_set_task_data (mark, g_task_get_task_data (task), NULL);
        g_task_run_in_thread (mark, mark_idle_thread);
}

/* A pool VM runs one command before it is handed out: the first exec in a fresh guest runs code
 * nothing has run yet (the agent's spawn path, the dynamic loader, libc start-up), which under
 * TCG is translated on first use and took about 30 ms more than every later exec. The session
 * that takes the VM then starts on warm paths. */
static void
boot_connected (GObject *source, GAsyncResult *result, gpointer user_data)
{
        GTask *task = user_data;
        BootData *d = g_task_get_task_data (task);
        GError *error = NULL;
        static const char *const warm[] = { "/bin/true", NULL };
        g_autoptr (CorralExecSpec) spec = corral_exec_spec_new_argv (warm);

        if (!corral_vm_manager_connect_agent_finish (CORRAL_VM_MANAGER (source), result, &error)) {
                boot_fail (task, error);
                return;
        }
        corral_exec_spec_set_timeout_ms (spec, BOOT_TIMEOUT_MS);
        corral_agent_client_run_async (d->client, spec, 0, g_task_get_cancellable (task),
                                       boot_warmed, task);
}

static void
boot_created (GObject *source, GAsyncResult *result, gpointer user_data)
{
        GTask *task = user_data;
        CorralVmPool *self = g_task_get_source_object (task);
        BootData *d = g_task_get_task_data (task);
        GError *error = NULL;
        g_autoptr (CorralVmInfo) info =
                corral_vm_manager_create_finish (CORRAL_VM_MANAGER (source), result, &error);

        if (!info) {
                /* Nothing to remove: create cleans up after itself. */
                g_task_return_error (task, error);
                g_object_unref (task);
                return;
        }
        if (g_cancellable_is_cancelled (g_task_get_cancellable (task))) {
                boot_fail (task, g_error_new_literal (G_IO_ERROR, G_IO_ERROR_CANCELLED,
                                                      "the boot was cancelled"));
                return;
        }
        d->client = corral_agent_client_new ();
        corral_vm_manager_connect_agent_async (self->manager, d->name, d->client, BOOT_TIMEOUT_MS,
                                               g_task_get_cancellable (task), boot_connected, task);
}

/* Result: (transfer full) the VM name; the VM is in self->ready. */
static void
boot_one_async (CorralVmPool *self,
                GCancellable *cancellable,
                GAsyncReadyCallback callback,
                gpointer user_data)
{
        GTask *task = g_task_new (self, cancellable, callback, user_data);
        BootData *d = g_new0 (BootData, 1);
        CorralVmSpec spec = self->spec;

        d->name = g_strdup_printf (CORRAL_POOL_VM_PREFIX "%08x", g_random_int ());
        g_task_set_task_data (task, d, (GDestroyNotify) boot_data_free);
        spec.name = d->name;
        self->n_booting++;
        g_hash_table_add (self->booting, g_strdup (d->name));
        if (!spec.kernel) {
                g_task_return_new_error (task, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                                         "this pool was made without a VM spec: it cannot boot");
                g_object_unref (task);
                return;
        }
        corral_vm_manager_create_async (self->manager, &spec, NULL, boot_created, task);
}

static char *
boot_one_finish (CorralVmPool *self, GAsyncResult *result, GError **error)
{
        BootData *d = g_task_get_task_data (G_TASK (result));

        g_hash_table_remove (self->booting, d->name);
        self->n_booting--;
        return g_task_propagate_pointer (G_TASK (result), error);
}

/* Background refill --------------------------------------------------------------------------- */

static void maybe_refill (CorralVmPool *self);

static void
refill_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (CorralVmPool) self = CORRAL_VM_POOL (source);
        g_autoptr (GError) error = NULL;
        g_autofree char *name = boot_one_finish (self, result, &error);

        if (!name) {
                if (!g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
                        g_warning ("warm pool: a background boot failed: %s", error->message);
                        self->refill_failed = TRUE;
                        g_signal_emit (self, signals[SIGNAL_BOOT_FAILED], 0, error);
                }
                return;
        }
        maybe_refill (self);
}

static void
maybe_refill (CorralVmPool *self)
{
        if (self->n_booting > 0 || self->ready.length >= self->size || self->refill_failed)
                return;
        /* The task holds a reference: the boot completes (or cleans up) even if we are dropped. */
        g_object_ref (self);
        boot_one_async (self, self->cancellable, refill_done, NULL);
}

static gboolean
refill_delayed_cb (gpointer user_data)
{
        CorralVmPool *self = user_data;

        self->refill_id = 0;
        maybe_refill (self);
        return G_SOURCE_REMOVE;
}

static void
schedule_refill (CorralVmPool *self)
{
        if (!self->refill_id)
                self->refill_id = g_timeout_add (REFILL_DELAY_MS, refill_delayed_cb, self);
}

void
corral_vm_pool_set_size (CorralVmPool *self, guint size)
{
        g_return_if_fail (CORRAL_IS_VM_POOL (self));
        self->size = size;
        self->refill_failed = FALSE;
        maybe_refill (self);
}

void
corral_vm_pool_set_take_own (CorralVmPool *self, gboolean take_own)
{
        g_return_if_fail (CORRAL_IS_VM_POOL (self));
        self->take_own = take_own;
}

/* Fill ---------------------------------------------------------------------------------------- */

typedef struct {
        guint target;
        guint need;
        guint booted;
} FillData;

static void fill_next (GTask *task);

static void
fill_booted (GObject *source, GAsyncResult *result, gpointer user_data)
{
        GTask *task = user_data;
        FillData *d = g_task_get_task_data (task);
        GError *error = NULL;
        g_autofree char *name = boot_one_finish (CORRAL_VM_POOL (source), result, &error);

        if (!name) {
                g_task_return_error (task, error);
                g_object_unref (task);
                return;
        }
        d->booted++;
        fill_next (task);
}

static void
fill_next (GTask *task)
{
        CorralVmPool *self = g_task_get_source_object (task);
        FillData *d = g_task_get_task_data (task);

        if (d->booted >= d->need) {
                g_task_return_boolean (task, TRUE);
                g_object_unref (task);
                return;
        }
        boot_one_async (self, g_task_get_cancellable (task), fill_booted, task);
}

static void
count_idle_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
        CorralVmPool *self = source;
        GError *error = NULL;
        g_autoptr (GPtrArray) entries = NULL;
        gssize idle = 0;

        if (self->take_own) {
                g_task_return_int (task, 0); /* its own are counted on the main thread */
                return;
        }
        entries = list_entries (_corral_vm_manager_get_conn (self->manager), &error);

        if (!entries) {
                g_task_return_error (task, error);
                return;
        }
        for (guint i = 0; i < entries->len; i++) {
                CorralVmPoolEntry *e = entries->pdata[i];
                if (e->pool_state == CORRAL_VM_POOL_IDLE && e->state == CORRAL_VM_STATE_RUNNING)
                        idle++;
        }
        g_task_return_int (task, idle);
}

static void
fill_counted (GObject *source, GAsyncResult *result, gpointer user_data)
{
        GTask *task = user_data;
        FillData *d = g_task_get_task_data (task);
        GError *error = NULL;
        gssize idle = g_task_propagate_int (G_TASK (result), &error);

        if (idle < 0) {
                g_task_return_error (task, error);
                g_object_unref (task);
                return;
        }
        if (CORRAL_VM_POOL (source)->take_own)
                idle = CORRAL_VM_POOL (source)->ready.length;
        d->need = (gssize) d->target > idle ? d->target - (guint) idle : 0;
        fill_next (task);
}

void
corral_vm_pool_fill_async (CorralVmPool *self,
                           guint n,
                           GCancellable *cancellable,
                           GAsyncReadyCallback callback,
                           gpointer user_data)
{
        GTask *task;
        g_autoptr (GTask) count = NULL;
        FillData *d = g_new0 (FillData, 1);

        g_return_if_fail (CORRAL_IS_VM_POOL (self));
        d->target = n;
        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_task_data (task, d, g_free);
        count = g_task_new (self, cancellable, fill_counted, task);
        g_task_run_in_thread (count, count_idle_thread);
}

gboolean
corral_vm_pool_fill_finish (CorralVmPool *self,
                            GAsyncResult *result,
                            guint *ret_booted,
                            GError **error)
{
        FillData *d;

        g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
        d = g_task_get_task_data (G_TASK (result));
        if (ret_booted)
                *ret_booted = d->booted;
        return g_task_propagate_boolean (G_TASK (result), error);
}

/* Take ---------------------------------------------------------------------------------------- */

typedef struct {
        char *alias;
        char *name; /* set: an in-process ready VM; NULL: find an idle one in libvirt */
        CorralAgentClient *client;
} TakeData;

static void
take_data_free (TakeData *d)
{
        g_free (d->alias);
        g_free (d->name);
        g_clear_object (&d->client);
        g_free (d);
}

static gboolean
alias_is_free (virConnectPtr conn, const char *alias, GError **error)
{
        g_autofree char *dname = g_strconcat (CORRAL_DOMAIN_PREFIX, alias, NULL);
        g_autoptr (virDomain) same = NULL;
        g_autoptr (virDomain) aliased = NULL;

        if (!corral_domain_name_is_valid (dname) || strchr (alias, '/')) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                             "“%s” is not a valid VM name", alias);
                return FALSE;
        }
        same = virDomainLookupByName (conn, dname);
        if (!same)
                aliased = _corral_pool_lookup_alias (conn, alias);
        if (same || aliased) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_EXISTS,
                             "a VM called “%s” already exists", alias);
                return FALSE;
        }
        return TRUE;
}

static void
take_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
        CorralVmPool *self = source;
        TakeData *d = data;
        virConnectPtr conn = _corral_vm_manager_get_conn (self->manager);
        g_autoptr (virDomain) dom = NULL;
        G_GNUC_UNUSED g_autoptr (GMutexLocker) locker = g_mutex_locker_new (&self->take_lock);
        GError *error = NULL;

        if (!alias_is_free (conn, d->alias, &error)) {
                g_task_return_error (task, error);
                return;
        }
        if (d->name) {
                g_autofree char *dname = g_strconcat (CORRAL_DOMAIN_PREFIX, d->name, NULL);
                if (!(dom = virDomainLookupByName (conn, dname))) {
                        _corral_vm_set_libvirt_error (&error, CORRAL_VM_ERROR_FAILED,
                                                      "the pool VM vanished");
                        g_task_return_error (task, error);
                        return;
                }
        } else if (self->take_own) {
                g_task_return_new_error (task, CORRAL_VM_ERROR, CORRAL_VM_ERROR_NO_SUCH_VM,
                                         "this pool has no idle VM of its own");
                return;
        } else {
                g_autoptr (GPtrArray) doms = _corral_pool_list_domains (conn, &error);

                if (!doms) {
                        g_task_return_error (task, error);
                        return;
                }
                for (guint i = 0; i < doms->len && !dom; i++) {
                        CorralPoolRecord meta;

                        _corral_pool_record_read (doms->pdata[i], &meta);
                        g_free (meta.alias);
                        if (meta.state == CORRAL_VM_POOL_IDLE &&
                            virDomainIsActive (doms->pdata[i]) == 1 &&
                            _corral_vm_domain_state (doms->pdata[i]) == CORRAL_VM_STATE_RUNNING)
                                dom = g_ptr_array_steal_index (doms, i);
                }
                if (!dom) {
                        g_task_return_new_error (task, CORRAL_VM_ERROR, CORRAL_VM_ERROR_NO_SUCH_VM,
                                                 "the warm pool is empty");
                        return;
                }
                d->name = g_strdup (virDomainGetName (dom) + strlen (CORRAL_DOMAIN_PREFIX));
        }
        if (!_corral_pool_record_write (dom, CORRAL_VM_POOL_TAKEN, d->alias, &error)) {
                g_task_return_error (task, error);
                return;
        }
        g_task_return_boolean (task, TRUE);
}

static void
take_connected (GObject *source, GAsyncResult *result, gpointer user_data)
{
        GTask *task = user_data;
        GError *error = NULL;

        if (!corral_vm_manager_connect_agent_finish (CORRAL_VM_MANAGER (source), result, &error))
                g_task_return_error (task, error);
        else
                g_task_return_boolean (task, TRUE);
        g_object_unref (task);
}

static void
take_marked (GObject *source, GAsyncResult *result, gpointer user_data)
{
        GTask *task = user_data;
        CorralVmPool *self = g_task_get_source_object (task);
        TakeData *d = g_task_get_task_data (task);
        GError *error = NULL;

        if (!g_task_propagate_boolean (G_TASK (result), &error)) {
                if (d->client) {
                        /* Still idle: back to the front of the queue. */
                        ReadyVm *r = g_new0 (ReadyVm, 1);
                        r->name = g_strdup (d->name);
                        r->client = g_steal_pointer (&d->client);
                        g_queue_push_head (&self->ready, r);
                }
                g_task_return_error (task, error);
                g_object_unref (task);
                return;
        }
        schedule_refill (self);
        if (d->client && corral_agent_client_get_connected (d->client)) {
                g_task_return_boolean (task, TRUE);
                g_object_unref (task);
                return;
        }
        /* Booted by another process (or our connection dropped): one HELLO. */
        if (!d->client)
                d->client = corral_agent_client_new ();
        corral_vm_manager_connect_agent_async (self->manager, d->name, d->client, ADOPT_TIMEOUT_MS,
                                               g_task_get_cancellable (task), take_connected, task);
}

void
corral_vm_pool_take_async (CorralVmPool *self,
                           const char *alias,
                           GCancellable *cancellable,
                           GAsyncReadyCallback callback,
                           gpointer user_data)
{
        GTask *task;
        g_autoptr (GTask) mark = NULL;
        TakeData *d = g_new0 (TakeData, 1);
        ReadyVm *r;

        g_return_if_fail (CORRAL_IS_VM_POOL (self) && alias);
        d->alias = g_strdup (alias);
        if ((r = g_queue_pop_head (&self->ready))) {
                d->name = g_steal_pointer (&r->name);
                d->client = g_steal_pointer (&r->client);
                ready_vm_free (r);
        }
        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_task_data (task, d, (GDestroyNotify) take_data_free);
        mark = g_task_new (self, cancellable, take_marked, task);
        g_task_set_task_data (mark, d, NULL);
        g_task_run_in_thread (mark, take_thread);
}

CorralAgentClient *
corral_vm_pool_take_finish (CorralVmPool *self,
                            GAsyncResult *result,
                            char **ret_vm_name,
                            GError **error)
{
        TakeData *d;

        g_return_val_if_fail (g_task_is_valid (result, self), NULL);
        if (!g_task_propagate_boolean (G_TASK (result), error))
                return NULL;
        d = g_task_get_task_data (G_TASK (result));
        if (ret_vm_name)
                *ret_vm_name = g_strdup (d->name);
        return g_steal_pointer (&d->client);
}

/* Drain --------------------------------------------------------------------------------------- */

typedef struct {
        GPtrArray *names;
        guint next;
        guint removed;
} DrainData;

static void
drain_data_free (DrainData *d)
{
        g_ptr_array_unref (d->names);
        g_free (d);
}

static void drain_next (GTask *task);

static void
drain_removed (GObject *source, GAsyncResult *result, gpointer user_data)
{
        GTask *task = user_data;
        DrainData *d = g_task_get_task_data (task);
        GError *error = NULL;

        if (!corral_vm_manager_op_finish (CORRAL_VM_MANAGER (source), result, &error) &&
            !g_error_matches (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_NO_SUCH_VM)) {
                g_task_return_error (task, error);
                g_object_unref (task);
                return;
        }
        if (!error)
                d->removed++;
        g_clear_error (&error);
        drain_next (task);
}

static void
drain_next (GTask *task)
{
        CorralVmPool *self = g_task_get_source_object (task);
        DrainData *d = g_task_get_task_data (task);

        if (d->next >= d->names->len) {
                g_task_return_boolean (task, TRUE);
                g_object_unref (task);
                return;
        }
        corral_vm_manager_op_async (self->manager, d->names->pdata[d->next++], CORRAL_VM_OP_REMOVE,
                                    g_task_get_cancellable (task), drain_removed, task);
}

static void
drain_listed (GObject *source, GAsyncResult *result, gpointer user_data)
{
        GTask *task = user_data;
        DrainData *d = g_task_get_task_data (task);
        GError *error = NULL;
        g_autoptr (GPtrArray) entries =
                corral_vm_pool_list_finish (CORRAL_VM_POOL (source), result, &error);

        if (!entries) {
                g_task_return_error (task, error);
                g_object_unref (task);
                return;
        }
        for (guint i = 0; i < entries->len; i++) {
                CorralVmPoolEntry *e = entries->pdata[i];
                CorralVmPool *self = CORRAL_VM_POOL (source);

                /* Our own boots in flight were cancelled: they remove their VM themselves. */
                if (e->pool_state != CORRAL_VM_POOL_TAKEN &&
                    !g_hash_table_contains (self->booting, e->name))
                        g_ptr_array_add (d->names, g_strdup (e->name));
        }
        drain_next (task);
}

void
corral_vm_pool_drain_async (CorralVmPool *self,
                            GCancellable *cancellable,
                            GAsyncReadyCallback callback,
                            gpointer user_data)
{
        GTask *task;
        DrainData *d = g_new0 (DrainData, 1);
        ReadyVm *r;

        g_return_if_fail (CORRAL_IS_VM_POOL (self));
        self->size = 0;
        g_clear_handle_id (&self->refill_id, g_source_remove);
        /* Boots in flight remove their VM when they notice. */
        g_cancellable_cancel (self->cancellable);
        g_object_unref (self->cancellable);
        self->cancellable = g_cancellable_new ();
        while ((r = g_queue_pop_head (&self->ready))) {
                corral_agent_client_close (r->client);
                ready_vm_free (r);
        }
        d->names = g_ptr_array_new_with_free_func (g_free);
        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_task_data (task, d, (GDestroyNotify) drain_data_free);
        corral_vm_pool_list_async (self, cancellable, drain_listed, task);
}

gboolean
corral_vm_pool_drain_finish (CorralVmPool *self,
                             GAsyncResult *result,
                             guint *ret_removed,
                             GError **error)
{
        DrainData *d;

        g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
        d = g_task_get_task_data (G_TASK (result));
        if (ret_removed)
                *ret_removed = d->removed;
        return g_task_propagate_boolean (G_TASK (result), error);
}

/* Release ------------------------------------------------------------------------------------- */

void
corral_vm_pool_release_async (CorralVmPool *self,
                              GCancellable *cancellable,
                              GAsyncReadyCallback callback,
                              gpointer user_data)
{
        GTask *task;
        DrainData *d = g_new0 (DrainData, 1);
        ReadyVm *r;

        g_return_if_fail (CORRAL_IS_VM_POOL (self));
        self->size = 0;
        g_clear_handle_id (&self->refill_id, g_source_remove);
        g_cancellable_cancel (self->cancellable);
        g_object_unref (self->cancellable);
        self->cancellable = g_cancellable_new ();
        d->names = g_ptr_array_new_with_free_func (g_free);
        while ((r = g_queue_pop_head (&self->ready))) {
                corral_agent_client_close (r->client);
                g_ptr_array_add (d->names, g_steal_pointer (&r->name));
                ready_vm_free (r);
        }
        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_task_data (task, d, (GDestroyNotify) drain_data_free);
        drain_next (task);
}

gboolean
corral_vm_pool_release_finish (CorralVmPool *self,
                               GAsyncResult *result,
                               guint *ret_removed,
                               GError **error)
{
        return corral_vm_pool_drain_finish (self, result, ret_removed, error);
}
