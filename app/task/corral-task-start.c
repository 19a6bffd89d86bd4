/* corral-task-start.c — see corral-task-start.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-task-start.h"

#include <errno.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <unistd.h>

#include "corral-egress-vm.h"
#include "corral-image.h"
#include "corral-shares.h"
#include "corral-task-private.h"
#include "corral-thread.h"
#include "corral-policy.h"

/* clang-format off */
G_DEFINE_QUARK (corral-task-error-quark, corral_task_error)
/* clang-format on */

/* (transfer full) the policy, when it can be read, is valid and lets this version run. */
static CorralPolicy *
load_policy (GError **error)
{
        g_autoptr (CorralPolicy) policy = corral_policy_load_default (error);

        if (!policy || !corral_policy_check_version (policy, NULL, error))
                return NULL;
        return g_steal_pointer (&policy);
}

gboolean
corral_task_check_managed_policy (GError **error)
{
        g_autoptr (CorralPolicy) policy = load_policy (error);

        return policy != NULL;
}

gboolean
corral_task_check_computer_use (GError **error)
{
        g_autoptr (CorralPolicy) policy = load_policy (error);
        CorralPolicySetting how;
        gboolean allowed = TRUE;

        if (!policy)
                return FALSE;
        if (corral_policy_get_bool (policy, "computerUse.allowed", &allowed, &how) && how.locked &&
            !allowed) {
                g_set_error_literal (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_BLOCKED,
                                     _ ("Computer use (a screen the assistant sees and drives) is "
                                        "turned off (set by your organisation)."));
                return FALSE;
        }
        return TRUE;
}

static gboolean folder_unopenable (const char *shown, int err, GError **error);

/* The policy's word on each folder, where it really is (links resolved, as the file server
 * sees it; check_share made sure it exists). */
static gboolean
check_shares_allowed (CorralPolicy *policy,
                      const CorralTaskShare *shares,
                      gsize n_shares,
                      GError **error)
{
        for (gsize i = 0; i < n_shares; i++) {
                g_autofree char *where = realpath (shares[i].folder, NULL);

                if (!where) {
                        int err = errno;
                        g_autofree char *shown = g_filename_display_name (shares[i].folder);

                        return folder_unopenable (shown, err, error);
                }
                if (!corral_policy_check_share (policy, where, shares[i].mode, NULL, error))
                        return FALSE;
        }
        return TRUE;
}

static gboolean
folder_unopenable (const char *shown, int err, GError **error)
{
        g_set_error (error, CORRAL_TASK_ERROR, CORRAL_TASK_ERROR_FOLDER,
                     _ ("Corral cannot open the folder “%s”: %s. Choose another folder, or give "
                        "yourself access to it (Files › Properties › Permissions)."),
                     shown, g_strerror (err));
        return FALSE;
}

static gboolean
check_share (const CorralTaskShare *share, GError **error)
{
        GStatBuf st;
        int err;
        g_autofree char *shown = g_filename_display_name (share->folder);

        if (!g_path_is_absolute (share->folder)) {
                g_set_error (error, CORRAL_TASK_ERROR, CORRAL_TASK_ERROR_FOLDER,
                             _ ("“%s” is not a full path to a folder; give the whole path, "
                                "starting with /."),
                             shown);
                return FALSE;
        }
        if (g_stat (share->folder, &st) != 0) {
                err = errno;
                if (err == ENOENT || err == ENOTDIR) {
                        g_set_error (error, CORRAL_TASK_ERROR, CORRAL_TASK_ERROR_FOLDER,
                                     _ ("The folder “%s” does not exist. Choose another folder."),
                                     shown);
                        return FALSE;
                }
                return folder_unopenable (shown, err, error);
        }
        if (!S_ISDIR (st.st_mode)) {
                g_set_error (error, CORRAL_TASK_ERROR, CORRAL_TASK_ERROR_FOLDER,
                             _ ("“%s” is a file, not a folder. Choose the folder that holds "
                                "it."),
                             shown);
                return FALSE;
        }
        /* The file server works with the person's rights: what they cannot open, the
         * assistant would only meet as "Permission denied" after the boot. */
        if (access (share->folder, R_OK | X_OK) != 0)
                return folder_unopenable (shown, errno, error);
        if (share->mode != FS_MODE_RO && access (share->folder, W_OK) != 0) {
                err = errno;
                g_set_error (error, CORRAL_TASK_ERROR, CORRAL_TASK_ERROR_FOLDER,
                             _ ("The folder “%s” cannot be changed from your account (%s), so "
                                "the assistant could not edit it. Share it with “%s”, or give "
                                "yourself write access to it."),
                             shown, g_strerror (err), fs_mode_describe (FS_MODE_RO));
                return FALSE;
        }
        return TRUE;
}

/* A locked maximum (vm.maxMemoryMib, vm.maxVcpus) that value passes; 0: no maximum. */
static gint64
locked_max (CorralPolicy *policy, const char *key)
{
        gint64 max = 0;
        CorralPolicySetting how;

        if (corral_policy_get_int (policy, key, &max, &how) && how.locked)
                return max;
        return 0;
}

static gboolean
workspace_allowed (
        CorralPolicy *policy, const char *image, guint memory_mib, guint vcpus, GError **error)
{
        const char *required = NULL;
        CorralPolicySetting how;
        gint64 max;

        if (corral_policy_get_string (policy, "images.required", &required, &how) && how.locked &&
            !g_str_equal (required, image)) {
                g_set_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_BLOCKED,
                             _ ("Tasks must use the workspace image “%s” (set by your "
                                "organisation); choose it in Preferences, on the Workspace "
                                "page."),
                             required);
                return FALSE;
        }
        if (!corral_policy_allows (policy, "images.allowed", image, error))
                return FALSE;
        if ((max = locked_max (policy, "vm.maxMemoryMib")) && memory_mib > max) {
                g_set_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_BLOCKED,
                             _ ("A workspace may have at most %u MiB of memory (set by your "
                                "organisation); choose less in Preferences, on the Workspace "
                                "page."),
                             (guint) max);
                return FALSE;
        }
        if ((max = locked_max (policy, "vm.maxVcpus")) && vcpus > max) {
                g_set_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_BLOCKED,
                             g_dngettext (GETTEXT_PACKAGE,
                                          "A workspace may have at most %u processor (set by "
                                          "your organisation); choose fewer in Preferences, on "
                                          "the Workspace page.",
                                          "A workspace may have at most %u processors (set by "
                                          "your organisation); choose fewer in Preferences, on "
                                          "the Workspace page.",
                                          (gulong) max),
                             (guint) max);
                return FALSE;
        }
        return TRUE;
}

gboolean
corral_task_check_workspace (const char *image, guint memory_mib, guint vcpus, GError **error)
{
        g_autoptr (CorralPolicy) policy = NULL;

        g_return_val_if_fail (image != NULL, FALSE);
        policy = load_policy (error);
        return policy && workspace_allowed (policy, image, memory_mib, vcpus, error);
}

char *
corral_task_default_image (const char *chosen, gboolean screen)
{
        g_autoptr (CorralPolicy) policy = corral_policy_load_default (NULL);
        const char *required = NULL;
        CorralPolicySetting how;

        /* A damaged policy stops the start in corral_task_preflight, with its reason. */
        if (policy && corral_policy_get_string (policy, "images.required", &required, &how) &&
            how.locked)
                return g_strdup (required);
        /* A screen with a desktop on it; an organisation's own image stays its choice. */
        if (screen &&
            (!chosen || g_str_equal (chosen, "minimal") || g_str_equal (chosen, "standard")))
                return g_strdup ("desktop");
        return g_strdup (chosen ? chosen : "minimal");
}

gboolean
corral_task_check_shares (const CorralTaskShare *shares, gsize n_shares, GError **error)
{
        g_return_val_if_fail (shares != NULL || n_shares == 0, FALSE);

        for (gsize i = 0; i < n_shares; i++)
                if (!check_share (&shares[i], error))
                        return FALSE;
        return TRUE;
}

gboolean
corral_task_preflight (const CorralTaskShare *shares,
                       gsize n_shares,
                       const char *image,
                       guint memory_mib,
                       guint vcpus,
                       GError **error)
{
        g_autoptr (CorralPolicy) policy = NULL;

        g_return_val_if_fail (image != NULL, FALSE);
        /* The policy read once: what every check of this start goes by. */
        policy = load_policy (error);
        return policy && corral_task_check_shares (shares, n_shares, error) &&
               check_shares_allowed (policy, shares, n_shares, error) &&
               workspace_allowed (policy, image, memory_mib, vcpus, error);
}

gboolean
corral_task_start_services (const char *vm_dir,
                            guint kept_space_mib,
                            const CorralTaskShare *shares,
                            gsize n_shares,
                            CorralEgressPolicy *policy,
                            GStrv *ret_names,
                            GError **error)
{
        g_autofree char *port = NULL;
        g_autoptr (GStrvBuilder) names = g_strv_builder_new ();

        g_return_val_if_fail (vm_dir != NULL, FALSE);
        g_return_val_if_fail (shares != NULL || n_shares == 0, FALSE);

        /* Before the shares: no change is made under a space the person did not choose. */
        if (kept_space_mib && !corral_shares_set_kept_space (vm_dir, kept_space_mib, error))
                return FALSE;
        for (gsize i = 0; i < n_shares; i++) {
                g_autofree char *name = NULL;

                if (!corral_shares_add (vm_dir, shares[i].folder, shares[i].mode, NULL, NULL, &name,
                                        error))
                        return FALSE;
                g_strv_builder_add (names, name);
        }
        port = g_build_filename (vm_dir, "fs.sock", NULL);
        if ((n_shares > 0 || g_file_test (port, G_FILE_TEST_EXISTS)) &&
            !corral_shares_ensure_server (vm_dir, error))
                return FALSE;
        if (policy) {
                g_autofree char *path = g_build_filename (vm_dir, "egress-policy.json", NULL);

                if (!corral_egress_policy_save_file (policy, path, error))
                        return FALSE;
        }
        /* Started before the caller waits for the mounts: the guest's proxy sets up its session
         * meanwhile. */
        if (!corral_egress_vm_ensure (vm_dir, error))
                return FALSE;
        if (ret_names)
                *ret_names = g_strv_builder_end (names);
        return TRUE;
}

/* Making a workspace ---------------------------------------------------------------------------
 */

typedef struct {
        CorralVmManager *manager;
        char *name;
        char *image_name;
        guint memory_mib;
        guint vcpus;
        gboolean screen;
        guint screen_width, screen_height;
        guint kept_space_mib;
        GArray *shares; /* CorralTaskShare, folders owned by folders */
        GPtrArray *folders;
        CorralEgressPolicy *policy; /* nullable */
        CorralLaunchProgressFunc progress;
        gpointer progress_data;
        CorralImage *image;
        CorralVmPool *pool; /* nullable */
        CorralVmInfo *info;
        GStrv names;
} Create;

static void
create_free (Create *c)
{
        g_clear_object (&c->manager);
        g_free (c->name);
        g_free (c->image_name);
        g_array_unref (c->shares);
        g_ptr_array_unref (c->folders);
        g_clear_pointer (&c->policy, corral_egress_policy_unref);
        corral_image_free (c->image);
        g_clear_object (&c->pool);
        g_clear_pointer (&c->info, corral_vm_info_free);
        g_strfreev (c->names);
        g_free (c);
}

static void
create_report (GTask *task, CorralLaunchStage stage, double fraction, const char *detail)
{
        Create *c = g_task_get_task_data (task);

        if (c->progress)
                c->progress (stage, fraction, detail, c->progress_data);
}

static void
on_services (GObject *source, GAsyncResult *res, gpointer user_data)
{
        GTask *task = user_data;
        Create *c = g_task_get_task_data (task);
        GError *error = NULL;

        corral_run_in_thread_finish (res, &error);
        if (corral_task_fail_if (task, error))
                return;
        g_task_return_pointer (task, g_steal_pointer (&c->info),
                               (GDestroyNotify) corral_vm_info_free);
        g_object_unref (task);
}

/* Worker thread: the shares, the network policy and the two per-VM daemons. */
static gpointer
start_services (gpointer data, GCancellable *cancellable, GError **error)
{
        Create *c = data;

        if (!corral_task_start_services (c->info->vm_dir, c->kept_space_mib,
                                         (const CorralTaskShare *) (void *) c->shares->data,
                                         c->shares->len, c->policy, &c->names, error))
                return NULL;
        return GINT_TO_POINTER (TRUE);
}

/* With c->info (made, or taken from the pool) or error. */
static void
have_vm (GTask *task, GError *error)
{
        Create *c = g_task_get_task_data (task);

        if (corral_task_fail_if (task, error))
                return;
        if (!c->info->vm_dir) {
                g_task_return_new_error (task, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                                         _ ("The workspace %s was made without its folder"),
                                         c->info->name);
                g_object_unref (task);
                return;
        }
        create_report (task, CORRAL_LAUNCH_STAGE_SHARE, -1.0, NULL);
        corral_run_in_thread (start_services, c, NULL, NULL, g_task_get_cancellable (task),
                              on_services, task);
}

static void
on_vm_created (GObject *source, GAsyncResult *res, gpointer user_data)
{
        GTask *task = user_data;
        Create *c = g_task_get_task_data (task);
        GError *error = NULL;

        c->info = corral_vm_manager_create_finish (CORRAL_VM_MANAGER (source), res, &error);
        have_vm (task, error);
}

typedef struct {
        GTask *task;
        double fraction;
        char *text;
} UploadProgress;

static gboolean
upload_progress_report (gpointer data)
{
        UploadProgress *u = data;

        create_report (u->task, CORRAL_LAUNCH_STAGE_BOOT, u->fraction, u->text);
        return G_SOURCE_REMOVE;
}

static void
upload_progress_free (gpointer data)
{
        UploadProgress *u = data;

        g_object_unref (u->task);
        g_free (u->text);
        g_free (u);
}

/* The image going to a remote libvirt host (once per image), from the manager's worker thread:
 * told on the task's own main context. */
static void
on_upload_progress (double fraction, const char *text, gpointer user_data)
{
        GTask *task = user_data;
        UploadProgress *u = g_new0 (UploadProgress, 1);

        u->task = g_object_ref (task);
        u->fraction = fraction;
        u->text = g_strdup (text);
        corral_main_context_post (g_task_get_context (task), upload_progress_report, u,
                                  upload_progress_free);
}

static void
boot (GTask *task)
{
        Create *c = g_task_get_task_data (task);
        CorralVmSpec spec = { .name = c->name,
                              .memory_mib = c->memory_mib,
                              .vcpus = c->vcpus,
                              .kernel = c->image->kernel,
                              .initrd = c->image->initrd,
                              .cmdline = c->image->cmdline,
                              .image_name = c->image->name,
                              .manifest_sha256 = c->image->manifest_sha256,
                              /* A per-VM overlay on it: the image's base is never written. */
                              .disk = c->image->disk,
                              .vnc = c->screen,
                              .display_width = c->screen_width,
                              .display_height = c->screen_height,
                              .progress = on_upload_progress,
                              .progress_data = task };
        create_report (task, CORRAL_LAUNCH_STAGE_BOOT, -1.0, NULL);
        corral_vm_manager_create_async (c->manager, &spec, g_task_get_cancellable (task),
                                        on_vm_created, task);
}

static void
on_image_built (GObject *source, GAsyncResult *res, gpointer user_data)
{
        GTask *task = user_data;
        Create *c = g_task_get_task_data (task);
        GError *error = NULL;

        c->image = corral_image_build_finish (res, &error);
        if (corral_task_fail_if (task, error))
                return;
        boot (task);
}

/* The taken VM, as a created one would be (its folder, where the services go). */
static void
on_taken_looked_up (GObject *source, GAsyncResult *res, gpointer user_data)
{
        GTask *task = user_data;
        Create *c = g_task_get_task_data (task);
        GError *error = NULL;

        c->info = corral_vm_manager_lookup_finish (CORRAL_VM_MANAGER (source), res, &error);
        have_vm (task, error);
}

static void
on_taken (GObject *source, GAsyncResult *res, gpointer user_data)
{
        GTask *task = user_data;
        Create *c = g_task_get_task_data (task);
        GError *error = NULL;
        g_autoptr (CorralAgentClient) client =
                corral_vm_pool_take_finish (CORRAL_VM_POOL (source), res, NULL, &error);

        if (!client && g_error_matches (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_NO_SUCH_VM)) {
                /* None idle (still booting elsewhere, or taken): boot one. */
                g_clear_error (&error);
                boot (task);
                return;
        }
        if (corral_task_fail_if (task, error))
                return;
        /* The caller connects its own client, as after a boot. */
        corral_agent_client_close (client);
        corral_vm_manager_lookup_async (c->manager, c->name, g_task_get_cancellable (task),
                                        on_taken_looked_up, task);
}

static void
on_image_progress (double fraction, const char *text, gpointer user_data)
{
        create_report (user_data, CORRAL_LAUNCH_STAGE_IMAGE, fraction, text);
}

void
corral_task_create_async (CorralVmManager *manager,
                          const CorralTaskSpec *spec,
                          CorralLaunchProgressFunc progress,
                          gpointer progress_data,
                          GCancellable *cancellable,
                          GAsyncReadyCallback callback,
                          gpointer user_data)
{
        GTask *task;
        Create *c;

        g_return_if_fail (CORRAL_IS_VM_MANAGER (manager));
        g_return_if_fail (spec != NULL && spec->name != NULL && spec->image != NULL);
        g_return_if_fail (spec->shares != NULL || spec->n_shares == 0);

        task = g_task_new (NULL, cancellable, callback, user_data);
        g_task_set_source_tag (task, corral_task_create_async);
        c = g_new0 (Create, 1);
        c->manager = g_object_ref (manager);
        c->name = g_strdup (spec->name);
        c->image_name = g_strdup (spec->image);
        c->memory_mib = spec->memory_mib;
        c->vcpus = spec->vcpus;
        c->screen = spec->screen;
        c->screen_width = spec->screen_width;
        c->screen_height = spec->screen_height;
        c->kept_space_mib = spec->kept_space_mib;
        c->shares = g_array_new (FALSE, FALSE, sizeof (CorralTaskShare));
        c->folders = g_ptr_array_new_with_free_func (g_free);
        for (gsize i = 0; i < spec->n_shares; i++) {
                CorralTaskShare share = { g_strdup (spec->shares[i].folder), spec->shares[i].mode };

                g_ptr_array_add (c->folders, (char *) share.folder);
                g_array_append_val (c->shares, share);
        }
        c->policy = spec->policy ? corral_egress_policy_ref (spec->policy) : NULL;
        c->progress = progress;
        c->progress_data = progress_data;
        g_task_set_task_data (task, c, (GDestroyNotify) create_free);
        /* Decided here, where the VM is made, whoever asked. */
        if (spec->screen) {
                GError *error = NULL;

                if (!corral_task_check_computer_use (&error)) {
                        g_task_return_error (task, error);
                        g_object_unref (task);
                        return;
                }
        }
        if (spec->built) {
                c->image = corral_image_copy (spec->built);
                /* A pool's VMs have no screen. */
                if (spec->pool && !spec->screen) {
                        c->pool = g_object_ref (spec->pool);
                        create_report (task, CORRAL_LAUNCH_STAGE_BOOT, -1.0, NULL);
                        corral_vm_pool_take_async (c->pool, c->name, cancellable, on_taken, task);
                        return;
                }
                boot (task);
                return;
        }
        create_report (task, CORRAL_LAUNCH_STAGE_IMAGE, -1.0, NULL);
        /* Reuses the cached image when nothing changed; its manifest is verified either way,
         * so a tampered image is refused before anything boots. NULL: the agent from
         * corral_paths_helper. */
        corral_image_build_async (c->image_name, NULL, on_image_progress, task, cancellable,
                                  on_image_built, task);
}

CorralVmInfo *
corral_task_create_finish (GAsyncResult *result, GStrv *ret_names, GError **error)
{
        CorralVmInfo *info;

        g_return_val_if_fail (g_task_is_valid (result, NULL), NULL);
        g_return_val_if_fail (g_task_get_source_tag (G_TASK (result)) == corral_task_create_async,
                              NULL);
        info = g_task_propagate_pointer (G_TASK (result), error);
        if (info && ret_names) {
                Create *c = g_task_get_task_data (G_TASK (result));

                *ret_names = g_steal_pointer (&c->names);
        }
        return info;
}
