/* corral-vm-gc.c — selecting and deleting garbage (see the header).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-vm-gc.h"
#include "corral-vm-private.h"

#include "corral-vm-disk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libvirt/libvirt.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MANIFEST_MAX (256 * 1024)

void
corral_gc_item_free (CorralGcItem *item)
{
        if (!item)
                return;
        g_free (item->path);
        g_free (item->reason);
        g_free (item);
}

static CorralGcItem *
item_new (CorralGcKind kind, const char *path, char *reason)
{
        CorralGcItem *item = g_new0 (CorralGcItem, 1);

        item->kind = kind;
        item->path = g_strdup (path);
        item->bytes = corral_vm_disk_usage (path);
        item->reason = reason;
        return item;
}

static int
item_cmp (gconstpointer a, gconstpointer b)
{
        const CorralGcItem *x = *(CorralGcItem *const *) a, *y = *(CorralGcItem *const *) b;

        if (x->kind != y->kind)
                return x->kind < y->kind ? -1 : 1;
        return strcmp (x->path, y->path);
}

static gboolean
in_list (const char *const *list, const char *s)
{
        return list && s && g_strv_contains (list, s);
}

/* VM folders ------------------------------------------------------------------------------- */

/* Backing files of the qcow2 files in a live VM's folder: they must stay. */
static void
collect_backing (const char *dir, GPtrArray *out)
{
        g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
        const char *entry;

        while (d && (entry = g_dir_read_name (d))) {
                g_autofree char *path = g_build_filename (dir, entry, NULL);
                char *backing;

                if (!g_file_test (path, G_FILE_TEST_IS_REGULAR) ||
                    g_file_test (path, G_FILE_TEST_IS_SYMLINK))
                        continue;
                if ((backing = corral_vm_disk_backing_file (path, NULL)))
                        g_ptr_array_add (out, backing);
        }
}

static gboolean
select_vm_dirs (const CorralGcInput *in, GPtrArray *items, GPtrArray *backing, GError **error)
{
        g_autoptr (GError) local = NULL;
        g_autoptr (GDir) d = NULL;
        const char *entry;
        gint64 now = g_get_real_time () / G_USEC_PER_SEC;

        if (!in->vms_dir)
                return TRUE;
        if (!(d = g_dir_open (in->vms_dir, 0, &local))) {
                if (g_error_matches (local, G_FILE_ERROR, G_FILE_ERROR_NOENT))
                        return TRUE;
                g_propagate_error (error, g_steal_pointer (&local));
                return FALSE;
        }
        while ((entry = g_dir_read_name (d))) {
                g_autofree char *path = g_build_filename (in->vms_dir, entry, NULL);
                struct stat st;

                if (lstat (path, &st) < 0 || !S_ISDIR (st.st_mode))
                        continue;
                if (in_list (in->live_vms, entry)) {
                        collect_backing (path, backing);
                        continue;
                }
                if (now - (gint64) st.st_mtim.tv_sec < (gint64) in->min_age_s)
                        continue;
                g_ptr_array_add (items,
                                 item_new (CORRAL_GC_VM_DIR, path,
                                           g_strdup_printf ("VM “%s” has no domain", entry)));
        }
        return TRUE;
}

/* Images ----------------------------------------------------------------------------------- */

typedef struct {
        char *dir;
        char *name;
        gint64 mtime;
} Image;

static void
image_free (gpointer p)
{
        Image *i = p;

        g_free (i->dir);
        g_free (i->name);
        g_free (i);
}

static int
image_cmp (gconstpointer a, gconstpointer b)
{
        const Image *x = *(Image *const *) a, *y = *(Image *const *) b;
        int r = strcmp (x->name, y->name);

        if (r != 0)
                return r;
        return x->mtime < y->mtime ? 1 : x->mtime > y->mtime ? -1 : strcmp (x->dir, y->dir);
}

/* The rules of corral-image.c: NAME-HEX, NAME [a-z0-9_-]{1,64} starting alphanumeric, with a
 * manifest.json. */
static char *
image_name_of (const char *entry)
{
        const char *dash = strrchr (entry, '-');
        gsize len;

        if (!dash || dash[1] == '\0' || entry[0] == '.')
                return NULL;
        for (const char *p = dash + 1; *p; p++)
                if (!g_ascii_isxdigit (*p))
                        return NULL;
        len = dash - entry;
        if (len == 0 || len > 64 || !g_ascii_isalnum (entry[0]))
                return NULL;
        for (gsize i = 0; i < len; i++)
                if (!(g_ascii_islower (entry[i]) || g_ascii_isdigit (entry[i]) || entry[i] == '_' ||
                      entry[i] == '-'))
                        return NULL;
        return g_strndup (entry, len);
}

static char *
manifest_sha256 (const char *dir)
{
        g_autofree char *path = g_build_filename (dir, "manifest.json", NULL);
        g_autofree char *data = NULL;
        gsize len = 0;

        if (!g_file_get_contents (path, &data, &len, NULL) || len > MANIFEST_MAX)
                return NULL;
        return g_compute_checksum_for_data (G_CHECKSUM_SHA256, (const guchar *) data, len);
}

static gboolean
image_in_use (const CorralGcInput *in, const Image *img, GPtrArray *backing)
{
        g_autofree char *sha = manifest_sha256 (img->dir);
        g_autofree char *prefix = g_strconcat (img->dir, "/", NULL);
        g_autofree char *esc_prefix = g_markup_escape_text (prefix, -1);

        if (sha && in_list (in->used_manifests, sha))
                return TRUE;
        for (guint i = 0; i < backing->len; i++)
                if (g_str_has_prefix (backing->pdata[i], prefix))
                        return TRUE;
        for (const char *const *t = in->used_texts; t && *t; t++)
                if (strstr (*t, prefix) || strstr (*t, esc_prefix))
                        return TRUE;
        return FALSE;
}

static gboolean
select_images (const CorralGcInput *in, GPtrArray *items, GPtrArray *backing, GError **error)
{
        g_autoptr (GError) local = NULL;
        g_autoptr (GDir) d = NULL;
        g_autoptr (GPtrArray) images = g_ptr_array_new_with_free_func (image_free);
        const char *entry;

        if (!in->images_dir)
                return TRUE;
        if (!(d = g_dir_open (in->images_dir, 0, &local))) {
                if (g_error_matches (local, G_FILE_ERROR, G_FILE_ERROR_NOENT))
                        return TRUE;
                g_propagate_error (error, g_steal_pointer (&local));
                return FALSE;
        }
        while ((entry = g_dir_read_name (d))) {
                g_autofree char *name = image_name_of (entry);
                g_autofree char *dir = NULL;
                g_autofree char *manifest = NULL;
                struct stat st;
                Image *img;

                if (!name)
                        continue;
                dir = g_build_filename (in->images_dir, entry, NULL);
                manifest = g_build_filename (dir, "manifest.json", NULL);
                /* No manifest: a build in progress, or not ours. */
                if (lstat (dir, &st) < 0 || !S_ISDIR (st.st_mode) || lstat (manifest, &st) < 0)
                        continue;
                img = g_new0 (Image, 1);
                img->dir = g_steal_pointer (&dir);
                img->name = g_steal_pointer (&name);
                img->mtime =
                        (gint64) st.st_mtim.tv_sec * G_USEC_PER_SEC + st.st_mtim.tv_nsec / 1000;
                g_ptr_array_add (images, img);
        }
        g_ptr_array_sort (images, image_cmp);
        for (guint i = 0; i < images->len; i++) {
                Image *img = images->pdata[i];
                gboolean newest =
                        i == 0 || !g_str_equal (img->name, ((Image *) images->pdata[i - 1])->name);

                if (newest || image_in_use (in, img, backing))
                        continue;
                g_ptr_array_add (items, item_new (CORRAL_GC_IMAGE, img->dir,
                                                  g_strdup_printf ("an older “%s” image no VM uses",
                                                                   img->name)));
        }
        return TRUE;
}

GPtrArray *
corral_gc_select (const CorralGcInput *in, GError **error)
{
        g_autoptr (GPtrArray) items =
                g_ptr_array_new_with_free_func ((GDestroyNotify) corral_gc_item_free);
        g_autoptr (GPtrArray) backing = g_ptr_array_new_with_free_func (g_free);

        g_return_val_if_fail (in != NULL, NULL);
        if (!select_vm_dirs (in, items, backing, error) ||
            !select_images (in, items, backing, error))
                return NULL;
        g_ptr_array_sort (items, item_cmp);
        return g_steal_pointer (&items);
}

/* Deleting --------------------------------------------------------------------------------- */

static gboolean
remove_tree (int parent_fd, const char *name, const char *path, GError **error)
{
        struct stat st;

        if (fstatat (parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno == ENOENT)
                        return TRUE;
                goto fail;
        }
        if (S_ISDIR (st.st_mode)) {
                int fd = openat (parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                DIR *d;
                struct dirent *ent;
                gboolean ok = TRUE;

                if (fd < 0 || !(d = fdopendir (fd))) {
                        if (fd >= 0)
                                close (fd);
                        goto fail;
                }
                while (ok && (ent = readdir (d))) {
                        g_autofree char *sub = NULL;

                        if (g_str_equal (ent->d_name, ".") || g_str_equal (ent->d_name, ".."))
                                continue;
                        sub = g_build_filename (path, ent->d_name, NULL);
                        ok = remove_tree (dirfd (d), ent->d_name, sub, error);
                }
                closedir (d);
                if (!ok)
                        return FALSE;
                if (unlinkat (parent_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                        goto fail;
                return TRUE;
        }
        if (unlinkat (parent_fd, name, 0) < 0 && errno != ENOENT)
                goto fail;
        return TRUE;
fail:
        g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno), "cannot remove %s: %s", path,
                     g_strerror (errno));
        return FALSE;
}

gboolean
corral_gc_remove (const CorralGcItem *item, GError **error)
{
        g_autofree char *parent = g_path_get_dirname (item->path);
        g_autofree char *base = g_path_get_basename (item->path);
        int fd = open (parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        gboolean ok;

        if (fd < 0) {
                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno), "%s: %s", parent,
                             g_strerror (errno));
                return FALSE;
        }
        ok = remove_tree (fd, base, item->path, error);
        close (fd);
        return ok;
}

/* From the manager's domains --------------------------------------------------------------- */

/* The image cache is shared by every state dir (and libvirt connection): the command lines of
 * the QEMUs running on this machine name the kernels and disks they use, whoever started them. */
static void
add_running_qemus (GPtrArray *texts)
{
        g_autoptr (GDir) proc = g_dir_open ("/proc", 0, NULL);
        const char *entry;

        while (proc && (entry = g_dir_read_name (proc))) {
                g_autofree char *path = NULL;
                g_autofree char *cmdline = NULL;
                gsize len = 0;

                if (!g_ascii_isdigit (entry[0]))
                        continue;
                path = g_build_filename ("/proc", entry, "cmdline", NULL);
                if (!g_file_get_contents (path, &cmdline, &len, NULL) || len == 0)
                        continue;
                if (!strstr (cmdline, "qemu"))
                        continue;
                for (gsize i = 0; i + 1 < len; i++)
                        if (cmdline[i] == '\0')
                                cmdline[i] = ' ';
                g_ptr_array_add (texts, g_steal_pointer (&cmdline));
        }
}

static void
gc_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
        CorralVmManager *self = source;
        virConnectPtr conn = _corral_vm_manager_get_conn (self);
        g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
        g_autoptr (GPtrArray) shas = g_ptr_array_new_with_free_func (g_free);
        g_autoptr (GPtrArray) texts = g_ptr_array_new_with_free_func (g_free);
        g_autofree char *vms_dir =
                g_build_filename (corral_vm_manager_get_selection (self)->state_dir, "vms", NULL);
        virDomainPtr *doms = NULL;
        GError *error = NULL;
        GPtrArray *items;
        int n = virConnectListAllDomains (conn, &doms, 0);

        if (n < 0) {
                g_task_return_new_error (task, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                                         "listing VMs failed");
                return;
        }
        for (int i = 0; i < n; i++) {
                const char *dname = virDomainGetName (doms[i]);
                g_autofree char *meta_xml = virDomainGetMetadata (
                        doms[i], VIR_DOMAIN_METADATA_ELEMENT, CORRAL_METADATA_NS, 0);
                g_autoptr (CorralDomainMetadata) meta =
                        meta_xml ? corral_domain_metadata_parse (meta_xml, NULL) : NULL;
                char *xml = virDomainGetXMLDesc (doms[i], VIR_DOMAIN_XML_INACTIVE);

                if (g_str_has_prefix (dname, CORRAL_DOMAIN_PREFIX))
                        g_ptr_array_add (names, g_strdup (dname + strlen (CORRAL_DOMAIN_PREFIX)));
                /* A folder named after the VM's metadata dir is live too (pool aliases). */
                if (meta && meta->vm_dir)
                        g_ptr_array_add (names, g_path_get_basename (meta->vm_dir));
                if (meta && meta->manifest_sha256)
                        g_ptr_array_add (shas, g_steal_pointer (&meta->manifest_sha256));
                if (xml) {
                        g_ptr_array_add (texts, g_strdup (xml));
                        free (xml);
                }
                virDomainFree (doms[i]);
        }
        free (doms);
        add_running_qemus (texts);
        g_ptr_array_add (names, NULL);
        g_ptr_array_add (shas, NULL);
        g_ptr_array_add (texts, NULL);

        CorralGcInput in = {
                .vms_dir = vms_dir,
                .images_dir = data,
                .live_vms = (const char *const *) names->pdata,
                .used_manifests = (const char *const *) shas->pdata,
                .used_texts = (const char *const *) texts->pdata,
                .min_age_s = 60,
        };
        if ((items = corral_gc_select (&in, &error)))
                g_task_return_pointer (task, items, (GDestroyNotify) g_ptr_array_unref);
        else
                g_task_return_error (task, error);
}

void
corral_vm_manager_gc_select_async (CorralVmManager *self,
                                   const char *images_dir,
                                   GCancellable *cancellable,
                                   GAsyncReadyCallback callback,
                                   gpointer user_data)
{
        g_autoptr (GTask) task = g_task_new (self, cancellable, callback, user_data);

        g_return_if_fail (CORRAL_IS_VM_MANAGER (self));
        g_task_set_task_data (task, g_strdup (images_dir), g_free);
        g_task_run_in_thread (task, gc_thread);
}

GPtrArray *
corral_vm_manager_gc_select_finish (CorralVmManager *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), NULL);
        return g_task_propagate_pointer (G_TASK (result), error);
}
