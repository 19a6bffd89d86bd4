/* corral-vm-disk.c — per-VM qcow2 overlays, disk usage and snapshots (see the header).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-vm-disk.h"
#include "corral-vm-private.h"

#include "corral-glib-compat.h"

#include <errno.h>
#include <fcntl.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

G_DEFINE_AUTOPTR_CLEANUP_FUNC (virDomain, virDomainFree)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (virDomainSnapshot, virDomainSnapshotFree)

/* Running tools ------------------------------------------------------------------------------- */

static gboolean
run_tool (const char *const *argv, GError **error)
{
        g_autoptr (GSubprocess) proc = NULL;
        g_autofree char *err_text = NULL;

        proc = g_subprocess_newv (
                argv, G_SUBPROCESS_FLAGS_STDOUT_SILENCE | G_SUBPROCESS_FLAGS_STDERR_PIPE, error);
        if (!proc || !g_subprocess_communicate_utf8 (proc, NULL, NULL, NULL, &err_text, error))
                return FALSE;
        if (!g_subprocess_get_if_exited (proc) || g_subprocess_get_exit_status (proc) != 0) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED, "%s failed: %s",
                             argv[0], err_text ? g_strstrip (err_text) : "(no message)");
                return FALSE;
        }
        return TRUE;
}

gboolean
corral_vm_disk_create_overlay (const char *base, const char *overlay, GError **error)
{
        const char *argv[] = { "qemu-img", "create", "-q",    "-f",    "qcow2", "-b",
                               base,       "-F",     "qcow2", overlay, NULL };

        g_return_val_if_fail (base && overlay, FALSE);
        if (!g_path_is_absolute (base) || !g_path_is_absolute (overlay)) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                             "disk paths must be absolute (%s, %s)", base, overlay);
                return FALSE;
        }
        if (g_file_test (overlay, G_FILE_TEST_EXISTS)) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_EXISTS, "%s already exists",
                             overlay);
                return FALSE;
        }
        if (!run_tool (argv, error)) {
                unlink (overlay);
                return FALSE;
        }
        return TRUE;
}

gboolean
_corral_vm_disk_prepare (const char *vm_dir, char **disk, GError **error)
{
        g_autofree char *overlay = g_build_filename (vm_dir, CORRAL_VM_DISK_OVERLAY, NULL);

        if (g_mkdir_with_parents (vm_dir, 0700) < 0) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED, "cannot create %s: %s",
                             vm_dir, g_strerror (errno));
                return FALSE;
        }
        /* A leftover from a failed create of the same name (no domain owns it). */
        unlink (overlay);
        if (!corral_vm_disk_create_overlay (*disk, overlay, error))
                return FALSE;
        g_free (*disk);
        *disk = g_steal_pointer (&overlay);
        return TRUE;
}

gboolean
corral_vm_disk_copy (const char *src, const char *dest, GError **error)
{
        const char *argv[] = { "cp", "--sparse=always", "--reflink=auto", "--", src, dest, NULL };

        if (g_file_test (dest, G_FILE_TEST_EXISTS)) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_EXISTS, "%s already exists",
                             dest);
                return FALSE;
        }
        return run_tool (argv, error);
}

/* qcow2 header: magic, version, backing_file_offset (u64), backing_file_size (u32), all BE. */
char *
corral_vm_disk_backing_file (const char *path, GError **error)
{
        g_autofd int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        guint8 hdr[20];
        guint64 offset;
        guint32 size;
        g_autofree char *name = NULL;

        if (fd < 0) {
                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno), "%s: %s", path,
                             g_strerror (errno));
                return NULL;
        }
        if (pread (fd, hdr, sizeof hdr, 0) != (gssize) sizeof hdr || memcmp (hdr, "QFI\xfb", 4))
                return NULL;
        offset = GUINT64_FROM_BE (*(guint64 *) (hdr + 8));
        size = GUINT32_FROM_BE (*(guint32 *) (hdr + 16));
        /* qcow2 limits the name to 1023 bytes. */
        if (offset == 0 || size == 0 || size > 1023)
                return NULL;
        name = g_malloc0 (size + 1);
        if (pread (fd, name, size, (off_t) offset) != (gssize) size)
                return NULL;
        return g_steal_pointer (&name);
}

guint64
corral_vm_disk_usage (const char *dir)
{
        g_autoptr (GDir) d = NULL;
        const char *entry;
        guint64 total = 0;

        if (!dir || !(d = g_dir_open (dir, 0, NULL)))
                return 0;
        while ((entry = g_dir_read_name (d))) {
                g_autofree char *path = g_build_filename (dir, entry, NULL);
                struct stat st;

                if (lstat (path, &st) < 0)
                        continue;
                if (S_ISDIR (st.st_mode))
                        total += corral_vm_disk_usage (path);
                else if (S_ISREG (st.st_mode))
                        total += (guint64) st.st_blocks * 512;
        }
        return total;
}

/* Snapshots ----------------------------------------------------------------------------------- */

typedef struct {
        char *name;
        char *snapshot;
        CorralVmSnapshotOp op;
} SnapData;

static void
snap_data_free (SnapData *d)
{
        g_free (d->name);
        g_free (d->snapshot);
        g_free (d);
}

static virDomainPtr
lookup (CorralVmManager *self, const char *name, GError **error)
{
        g_autofree char *dname = g_strconcat (CORRAL_DOMAIN_PREFIX, name, NULL);
        virDomainPtr dom = NULL;

        if (corral_domain_name_is_valid (dname))
                dom = virDomainLookupByName (_corral_vm_manager_get_conn (self), dname);
        if (!dom)
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_NO_SUCH_VM,
                             "no such VM: “%s” (see “corralctl vm ls”)", name);
        return dom;
}

static gboolean
has_disk (virDomainPtr dom)
{
        g_autofree char *xml = virDomainGetXMLDesc (dom, VIR_DOMAIN_XML_INACTIVE);

        return xml && strstr (xml, "<disk ") != NULL;
}

static gboolean
snapshot_name_is_valid (const char *snapshot)
{
        gsize len = snapshot ? strlen (snapshot) : 0;

        if (len == 0 || len > 64 || snapshot[0] == '.' || snapshot[0] == '-')
                return FALSE;
        for (const char *p = snapshot; *p; p++)
                if (!g_ascii_isalnum (*p) && *p != '_' && *p != '.' && *p != '-')
                        return FALSE;
        return TRUE;
}

static gboolean
do_snapshot (virDomainPtr dom, const SnapData *d, GError **error)
{
        g_autoptr (virDomainSnapshot) snap = NULL;

        if (!has_disk (dom)) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_INVALID_STATE,
                             "VM “%s” has no disk to snapshot (use a disk-backed image such as "
                             "“standard”)",
                             d->name);
                return FALSE;
        }
        if (d->op == CORRAL_VM_SNAPSHOT_CREATE) {
                g_autofree char *xml = g_strdup_printf (
                        "<domainsnapshot><name>%s</name></domainsnapshot>", d->snapshot);

                /* The name is validated, so it needs no escaping. */
                if (!(snap = virDomainSnapshotCreateXML (dom, xml, 0))) {
                        _corral_vm_set_libvirt_error (error, CORRAL_VM_ERROR_FAILED,
                                                      "taking the snapshot failed");
                        return FALSE;
                }
                return TRUE;
        }
        if (!(snap = virDomainSnapshotLookupByName (dom, d->snapshot, 0))) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                             "VM “%s” has no snapshot “%s”", d->name, d->snapshot);
                return FALSE;
        }
        if (d->op == CORRAL_VM_SNAPSHOT_REVERT) {
                if (virDomainRevertToSnapshot (snap, 0) < 0) {
                        _corral_vm_set_libvirt_error (error, CORRAL_VM_ERROR_FAILED,
                                                      "reverting to the snapshot failed");
                        return FALSE;
                }
                return TRUE;
        }
        if (virDomainSnapshotDelete (snap, 0) < 0) {
                _corral_vm_set_libvirt_error (error, CORRAL_VM_ERROR_FAILED,
                                              "deleting the snapshot failed");
                return FALSE;
        }
        return TRUE;
}

static void
snapshot_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
        SnapData *d = data;
        GError *error = NULL;
        g_autoptr (virDomain) dom = lookup (source, d->name, &error);

        if (dom && do_snapshot (dom, d, &error))
                g_task_return_boolean (task, TRUE);
        else
                g_task_return_error (task, error);
}

void
corral_vm_manager_snapshot_async (CorralVmManager *self,
                                  const char *name,
                                  const char *snapshot,
                                  CorralVmSnapshotOp op,
                                  GCancellable *cancellable,
                                  GAsyncReadyCallback callback,
                                  gpointer user_data)
{
        SnapData *d = g_new0 (SnapData, 1);
        g_autoptr (GTask) task = g_task_new (self, cancellable, callback, user_data);
        GError *error = NULL;

        g_return_if_fail (CORRAL_IS_VM_MANAGER (self) && name);
        d->name = g_strdup (name);
        d->snapshot = g_strdup (snapshot);
        d->op = op;
        g_task_set_task_data (task, d, (GDestroyNotify) snap_data_free);
        if (_corral_vm_manager_refuse_remote (self, "a disk snapshot", &error)) {
                g_task_return_error (task, error);
                return;
        }
        if (!snapshot_name_is_valid (snapshot)) {
                g_task_return_new_error (task, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                                         "“%s” is not a valid snapshot name: use at most 64 of "
                                         "A-Z a-z 0-9 _ . -",
                                         snapshot ? snapshot : "");
                return;
        }
        g_task_run_in_thread (task, snapshot_thread);
}

gboolean
corral_vm_manager_snapshot_finish (CorralVmManager *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
        return g_task_propagate_boolean (G_TASK (result), error);
}

static void
snapshot_list_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
        SnapData *d = data;
        GError *error = NULL;
        g_autoptr (virDomain) dom = lookup (source, d->name, &error);
        virDomainSnapshotPtr *snaps = NULL;
        g_autoptr (GPtrArray) names = g_ptr_array_new ();
        int n;

        if (!dom) {
                g_task_return_error (task, error);
                return;
        }
        n = virDomainListAllSnapshots (dom, &snaps, VIR_DOMAIN_SNAPSHOT_LIST_TOPOLOGICAL);
        if (n < 0) {
                _corral_vm_set_libvirt_error (&error, CORRAL_VM_ERROR_FAILED,
                                              "listing the snapshots failed");
                g_task_return_error (task, error);
                return;
        }
        for (int i = 0; i < n; i++) {
                g_ptr_array_add (names, g_strdup (virDomainSnapshotGetName (snaps[i])));
                virDomainSnapshotFree (snaps[i]);
        }
        free (snaps);
        g_ptr_array_add (names, NULL);
        g_task_return_pointer (task, g_ptr_array_free (g_steal_pointer (&names), FALSE),
                               (GDestroyNotify) g_strfreev);
}

void
corral_vm_manager_snapshot_list_async (CorralVmManager *self,
                                       const char *name,
                                       GCancellable *cancellable,
                                       GAsyncReadyCallback callback,
                                       gpointer user_data)
{
        SnapData *d = g_new0 (SnapData, 1);
        g_autoptr (GTask) task = g_task_new (self, cancellable, callback, user_data);

        g_return_if_fail (CORRAL_IS_VM_MANAGER (self) && name);
        d->name = g_strdup (name);
        g_task_set_task_data (task, d, (GDestroyNotify) snap_data_free);
        g_task_run_in_thread (task, snapshot_list_thread);
}

char **
corral_vm_manager_snapshot_list_finish (CorralVmManager *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), NULL);
        return g_task_propagate_pointer (G_TASK (result), error);
}
