/* corral-vm-gc.c — selecting and deleting garbage (see the header).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-vm-gc.h"

#include "corral-policy.h"
#include "corral-vm-private.h"

#include "corral-vm-disk.h"
#include "corral-vm-remote.h"

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
        g_free (item->volume);
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

/* Volumes of the remote pool ------------------------------------------------------------- */

/* Whether text names path whole (followed by the end of an XML value, not by more name). */
static gboolean
text_names_path (const char *text, const char *path)
{
        gsize len = strlen (path);

        for (const char *p = text; (p = strstr (p, path)); p += len)
                if (p[len] == '<' || p[len] == '\'' || p[len] == '"' || p[len] == ' ' ||
                    p[len] == '\0')
                        return TRUE;
        return FALSE;
}

static gboolean
volume_named (const CorralGcVolume *vols, gsize n_vols, const char *name)
{
        for (gsize i = 0; i < n_vols; i++)
                if (g_str_equal (vols[i].name, name))
                        return TRUE;
        return FALSE;
}

/* "corral-vm-NAME.qcow2" -> NAME (transfer full), else NULL. */
static char *
overlay_vm_name (const char *volume)
{
        g_autofree char *name = NULL;

        if (!g_str_has_prefix (volume, "corral-vm-") || !g_str_has_suffix (volume, ".qcow2"))
                return NULL;
        name = g_strndup (volume + strlen ("corral-vm-"),
                          strlen (volume) - strlen ("corral-vm-") - strlen (".qcow2"));
        return *name ? g_steal_pointer (&name) : NULL;
}

static void
add_volume (GPtrArray *items, const CorralGcVolume *v, char *reason)
{
        CorralGcItem *item = g_new0 (CorralGcItem, 1);

        item->kind = CORRAL_GC_REMOTE_VOLUME;
        item->path = g_strdup (v->path);
        item->volume = g_strdup (v->name);
        item->bytes = v->bytes;
        item->reason = reason;
        g_ptr_array_add (items, item);
}

void
corral_gc_select_volumes (const CorralGcVolume *vols,
                          gsize n_vols,
                          const char *const *live_vms,
                          const char *const *used_texts,
                          gint64 now,
                          guint min_age_s,
                          GPtrArray *items)
{
        g_autoptr (GPtrArray) backing = g_ptr_array_new ();
        guint first = items->len;

        /* Overlays: kept while their VM exists, and then their base is in use. */
        for (gsize i = 0; i < n_vols; i++) {
                const CorralGcVolume *v = &vols[i];
                g_autofree char *vm = overlay_vm_name (v->name);

                if (!vm)
                        continue;
                if (in_list (live_vms, vm) || (v->mtime && now - v->mtime < min_age_s)) {
                        if (v->backing)
                                g_ptr_array_add (backing, (gpointer) v->backing);
                        continue;
                }
                add_volume (items, v, g_strdup_printf ("the disk of “%s”, a VM that is gone", vm));
        }
        for (gsize i = 0; i < n_vols; i++) {
                const CorralGcVolume *v = &vols[i];
                g_autofree char *vm = overlay_vm_name (v->name);
                gboolean used = FALSE;

                if (vm || (v->mtime && now - v->mtime < min_age_s))
                        continue;
                if (g_str_has_suffix (v->name, ".done")) {
                        g_autofree char *main_name =
                                g_strndup (v->name, strlen (v->name) - strlen (".done"));

                        /* Otherwise it goes with its image (corral_vm_manager_gc_remove). */
                        if (!volume_named (vols, n_vols, main_name))
                                add_volume (items, v,
                                            g_strdup ("the marker of an upload that "
                                                      "is gone"));
                        continue;
                }
                for (guint j = 0; !used && j < backing->len; j++)
                        used = g_str_equal (backing->pdata[j], v->path);
                for (gsize j = 0; !used && used_texts && used_texts[j]; j++)
                        used = text_names_path (used_texts[j], v->path);
                if (!used)
                        add_volume (items, v, g_strdup ("an uploaded image no VM there uses"));
        }
        /* Sorted among themselves, after what was there. */
        if (items->len > first) {
                g_autoptr (GPtrArray) tail = g_ptr_array_new ();

                for (guint i = first; i < items->len; i++)
                        g_ptr_array_add (tail, items->pdata[i]);
                g_ptr_array_sort (tail, item_cmp);
                for (guint i = 0; i < tail->len; i++)
                        items->pdata[first + i] = tail->pdata[i];
        }
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
corral_vm_manager_gc_remove (CorralVmManager *self, const CorralGcItem *item, GError **error)
{
        virConnectPtr conn = _corral_vm_manager_get_conn (self);
        g_autofree char *marker = NULL;

        if (item->kind != CORRAL_GC_REMOTE_VOLUME)
                return corral_gc_remove (item, error);
        /* The marker first: an image without it is uploaded again, never booted half-gone. */
        marker = g_strconcat (item->volume, ".done", NULL);
        return _corral_remote_volume_delete (conn, marker, error) &&
               _corral_remote_volume_delete (conn, item->volume, error);
}

gboolean
corral_gc_remove (const CorralGcItem *item, GError **error)
{
        g_return_val_if_fail (item->kind != CORRAL_GC_REMOTE_VOLUME, FALSE);
        g_autofree char *parent = g_path_get_dirname (item->path);
        g_autofree char *base = g_path_get_basename (item->path);
        int fd = open (parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        gboolean ok;

        if (fd < 0) {
                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno), "%s: %s", parent,
                             g_strerror (errno));
                return FALSE;
        }
        if (item->kind == CORRAL_GC_VM_DIR) {
                /* The organisation's audit.keepDays: the audit logs outlive the VM folder. */
                g_autoptr (CorralPolicy) policy = corral_policy_load_default (NULL);

                if (!corral_policy_audit_keep (policy, item->path, base, error)) {
                        close (fd);
                        return FALSE;
                }
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

/* The text of <child> inside <parent> of libvirt's own XML (NULL when absent or escaped). */
static char *
xml_child_text (const char *xml, const char *parent, const char *child)
{
        g_autofree char *open_tag = g_strdup_printf ("<%s>", child);
        g_autofree char *close_tag = g_strdup_printf ("</%s>", child);
        const char *p = parent ? strstr (xml, parent) : xml;
        const char *start, *end;

        if (!p || !(start = strstr (p, open_tag)))
                return NULL;
        start += strlen (open_tag);
        if (!(end = strstr (start, close_tag)) || memchr (start, '&', (gsize) (end - start)))
                return NULL;
        return g_strndup (start, (gsize) (end - start));
}

/* The remote pool's garbage (none when there is no pool). */
static gboolean
select_remote_volumes (virConnectPtr conn,
                       const char *const *live_vms,
                       const char *const *used_texts,
                       GPtrArray *items,
                       GError **error)
{
        g_autoptr (virStoragePool) pool = virStoragePoolLookupByName (conn, CORRAL_REMOTE_POOL);
        g_autoptr (GPtrArray) strings = g_ptr_array_new_with_free_func (g_free);
        g_autoptr (GArray) vols = g_array_new (FALSE, TRUE, sizeof (CorralGcVolume));
        virStorageVolPtr *list = NULL;
        int n;

        if (!pool)
                return TRUE;
        virStoragePoolRefresh (pool, 0);
        if ((n = virStoragePoolListAllVolumes (pool, &list, 0)) < 0) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                             "listing Corral's volumes on the libvirt host failed");
                return FALSE;
        }
        for (int i = 0; i < n; i++) {
                CorralGcVolume v = { 0 };
                virStorageVolInfo info = { 0 };
                char *xml = virStorageVolGetXMLDesc (list[i], 0);
                char *path = virStorageVolGetPath (list[i]);
                g_autofree char *mtime = xml ? xml_child_text (xml, "<timestamps>", "mtime") : NULL;

                v.name = g_strdup (virStorageVolGetName (list[i]));
                g_ptr_array_add (strings, (char *) v.name);
                v.path = g_strdup (path ? path : v.name);
                g_ptr_array_add (strings, (char *) v.path);
                if (xml && (v.backing = xml_child_text (xml, "<backingStore>", "path")))
                        g_ptr_array_add (strings, (char *) v.backing);
                if (virStorageVolGetInfo (list[i], &info) == 0)
                        v.bytes = info.allocation;
                v.mtime = mtime ? g_ascii_strtoll (mtime, NULL, 10) : 0;
                g_array_append_val (vols, v);
                free (xml);
                free (path);
                virStorageVolFree (list[i]);
        }
        free (list);
        corral_gc_select_volumes ((const CorralGcVolume *) (gpointer) vols->data, vols->len,
                                  live_vms, used_texts, g_get_real_time () / G_USEC_PER_SEC, 60,
                                  items);
        return TRUE;
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
        if ((items = corral_gc_select (&in, &error)) &&
            (!corral_vm_manager_get_selection (self)->remote ||
             select_remote_volumes (conn, in.live_vms, in.used_texts, items, &error)))
                g_task_return_pointer (task, items, (GDestroyNotify) g_ptr_array_unref);
        else {
                g_clear_pointer (&items, g_ptr_array_unref);
                g_task_return_error (task, error);
        }
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
