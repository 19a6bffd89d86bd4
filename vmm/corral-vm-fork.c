/* corral-vm-fork.c — forking a VM through a save image (see the header).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-vm-fork.h"
#include "corral-vm-private.h"

#include "corral-vm-disk.h"

#include "corral-glib-compat.h"

#include <errno.h>
#include <fcntl.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <string.h>
#include <unistd.h>

#define SAVE_FILE "fork.save"

G_DEFINE_AUTOPTR_CLEANUP_FUNC (virDomain, virDomainFree)

typedef struct {
        char *source;
        char *name;
        char *made_dir; /* the fork's folder, once created: removed again on failure */
} ForkData;

static void
fork_data_free (ForkData *d)
{
        g_free (d->source);
        g_free (d->name);
        g_free (d->made_dir);
        g_free (d);
}

static guint
replace (GString *s, const char *raw_old, const char *raw_new, const char *suffix, guint limit)
{
        g_autofree char *eo = g_markup_escape_text (raw_old, -1);
        g_autofree char *en = g_markup_escape_text (raw_new, -1);
        g_autofree char *o = g_strconcat (eo, suffix, NULL);
        g_autofree char *n = g_strconcat (en, suffix, NULL);

        return g_string_replace (s, o, n, limit);
}

/* Whether XML still names a path in the folder ESC_DIR (the new folder may extend its name). */
static gboolean
still_names (const char *xml, const char *esc_dir)
{
        const char *suffixes[] = { "/", "'", "\"", "<" };

        for (gsize i = 0; i < G_N_ELEMENTS (suffixes); i++) {
                g_autofree char *needle = g_strconcat (esc_dir, suffixes[i], NULL);
                if (strstr (xml, needle))
                        return TRUE;
        }
        return FALSE;
}

char *
corral_vm_fork_rewrite_xml (const char *xml,
                            const char *src_domain,
                            const char *src_uuid,
                            const char *src_dir,
                            const char *new_domain,
                            const char *new_uuid,
                            const char *new_dir,
                            GError **error)
{
        g_autoptr (GString) s = g_string_new (xml);
        g_autofree char *old_name = g_strdup_printf ("<name>%s</name>", src_domain);
        g_autofree char *new_name = g_strdup_printf ("<name>%s</name>", new_domain);
        g_autofree char *old_uuid = g_strdup_printf ("<uuid>%s</uuid>", src_uuid);
        g_autofree char *new_uuid_el = g_strdup_printf ("<uuid>%s</uuid>", new_uuid);
        g_autofree char *esc_dir = g_markup_escape_text (src_dir, -1);
        guint paths;

        /* Names and uuids are plain [A-Za-z0-9_.-]: no escaping involved. */
        if (g_string_replace (s, old_name, new_name, 1) != 1 ||
            g_string_replace (s, old_uuid, new_uuid_el, 1) != 1) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                             "the saved XML does not name domain %s (%s)", src_domain, src_uuid);
                return NULL;
        }
        /* Every file of the VM lives in its folder: socket, console log, overlay, and the
         * metadata's dir path (an attribute, quoted either way). */
        paths = replace (s, src_dir, new_dir, "/", 0);
        paths += replace (s, src_dir, new_dir, "'", 0);
        paths += replace (s, src_dir, new_dir, "\"", 0);
        if (paths == 0 || still_names (s->str, esc_dir)) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                             "cannot move the paths of the saved XML from %s to %s", src_dir,
                             new_dir);
                return NULL;
        }
        return g_string_free (g_steal_pointer (&s), FALSE);
}

/* libvirt's QEMU save image (src/qemu/qemu_saveimage.h, version 2): a header of native-endian
 * u32s, then data_len bytes holding the domain XML, NUL, the optional cookie, NUL and zero
 * padding (64 KiB at least, for save-image-edit), then QEMU's migration stream. The restore API
 * refuses an XML with another uuid (ABI check), so the fork's XML is written into the file. */
#define SAVE_MAGIC "LibvirtQemudSave"
#define SAVE_MAGIC_LEN 16
#define SAVE_VERSION 2

typedef struct {
        char magic[SAVE_MAGIC_LEN];
        guint32 version;
        guint32 data_len;
        guint32 was_running;
        guint32 compressed;
        guint32 cookie_offset;
        guint32 unused[14];
} SaveHeader;

static gboolean
save_image_set_xml (const char *path, const char *xml, GError **error)
{
        g_autofd int fd = open (path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        SaveHeader h;
        g_autofree char *data = NULL;
        g_autofree char *cookie = NULL;
        gsize xml_len = strlen (xml) + 1, cookie_len = 0;

        if (fd < 0 || pread (fd, &h, sizeof h, 0) != (gssize) sizeof h) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED, "cannot read %s: %s",
                             path, g_strerror (errno));
                return FALSE;
        }
        if (memcmp (h.magic, SAVE_MAGIC, SAVE_MAGIC_LEN) != 0 || h.version != SAVE_VERSION ||
            h.data_len == 0 || h.data_len > 64 * 1024 * 1024 || h.cookie_offset >= h.data_len) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                             "%s is not a save image this version of Corral can fork from", path);
                return FALSE;
        }
        data = g_malloc0 (h.data_len + 1);
        if (pread (fd, data, h.data_len, sizeof h) != (gssize) h.data_len) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED, "%s is truncated",
                             path);
                return FALSE;
        }
        if (!g_str_has_prefix (data, "<domain")) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                             "%s has no domain XML where expected", path);
                return FALSE;
        }
        if (h.cookie_offset) {
                cookie = g_strdup (data + h.cookie_offset);
                cookie_len = strlen (cookie) + 1;
        }
        if (xml_len + cookie_len > h.data_len) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                             "the fork's XML does not fit in %s", path);
                return FALSE;
        }
        memset (data, 0, h.data_len);
        memcpy (data, xml, xml_len);
        if (cookie) {
                memcpy (data + xml_len, cookie, cookie_len);
                h.cookie_offset = (guint32) xml_len;
        }
        if (pwrite (fd, &h, sizeof h, 0) != (gssize) sizeof h ||
            pwrite (fd, data, h.data_len, sizeof h) != (gssize) h.data_len || fsync (fd) < 0) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED, "cannot write %s: %s",
                             path, g_strerror (errno));
                return FALSE;
        }
        return TRUE;
}

static char *
vm_dir_of (virDomainPtr dom)
{
        g_autofree char *meta_xml =
                virDomainGetMetadata (dom, VIR_DOMAIN_METADATA_ELEMENT, CORRAL_METADATA_NS, 0);
        g_autoptr (CorralDomainMetadata) meta =
                meta_xml ? corral_domain_metadata_parse (meta_xml, NULL) : NULL;

        return meta ? g_steal_pointer (&meta->vm_dir) : NULL;
}

/* The source is stopped (saved to SAVE_PATH): copy its disk, then bring it back. */
static gboolean
copy_disk_and_restore (virConnectPtr conn,
                       const char *xml,
                       const char *src_dir,
                       const char *new_dir,
                       const char *save_path,
                       unsigned int src_flags,
                       GError **error)
{
        g_autofree char *src_disk = g_build_filename (src_dir, CORRAL_VM_DISK_OVERLAY, NULL);
        g_autofree char *new_disk = g_build_filename (new_dir, CORRAL_VM_DISK_OVERLAY, NULL);
        g_autofree char *esc_disk = g_markup_escape_text (src_disk, -1);
        GError *copy_error = NULL;

        if (strstr (xml, esc_disk))
                corral_vm_disk_copy (src_disk, new_disk, &copy_error);
        /* Whatever happened to the copy, the source runs again. */
        if (virDomainRestoreFlags (conn, save_path, NULL, src_flags) < 0) {
                g_clear_error (&copy_error);
                _corral_vm_set_libvirt_error (
                        error, CORRAL_VM_ERROR_FAILED,
                        "restoring the source VM failed (its state is in " SAVE_FILE
                        " in the fork's folder)");
                return FALSE;
        }
        if (copy_error) {
                g_propagate_error (error, copy_error);
                return FALSE;
        }
        return TRUE;
}

static gboolean
do_fork (CorralVmManager *self, ForkData *d, GError **error)
{
        virConnectPtr conn = _corral_vm_manager_get_conn (self);
        const CorralHostSelection *sel = corral_vm_manager_get_selection (self);
        g_autofree char *src_dname = g_strconcat (CORRAL_DOMAIN_PREFIX, d->source, NULL);
        g_autofree char *new_dname = g_strconcat (CORRAL_DOMAIN_PREFIX, d->name, NULL);
        g_autofree char *new_dir = g_build_filename (sel->state_dir, "vms", d->name, NULL);
        g_autofree char *save_path = g_build_filename (new_dir, SAVE_FILE, NULL);
        g_autofree char *src_dir = NULL;
        g_autofree char *saved_xml = NULL;
        g_autofree char *fork_xml = NULL;
        g_autofree char *new_uuid = g_uuid_string_random ();
        char src_uuid[VIR_UUID_STRING_BUFLEN];
        g_autoptr (virDomain) src = NULL;
        g_autoptr (virDomain) existing = NULL;
        g_autoptr (virDomain) fork = NULL;
        unsigned int src_flags;
        int state = 0, reason = 0;

        if (!corral_domain_name_is_valid (new_dname) || strchr (d->name, '/')) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                             "“%s” is not a valid VM name", d->name);
                return FALSE;
        }
        if ((existing = virDomainLookupByName (conn, new_dname))) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_EXISTS,
                             "a VM called “%s” already exists", d->name);
                return FALSE;
        }
        if (!corral_domain_name_is_valid (src_dname) ||
            !(src = virDomainLookupByName (conn, src_dname))) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_NO_SUCH_VM,
                             "no such VM: “%s” (see “corralctl vm ls”)", d->source);
                return FALSE;
        }
        if (virDomainGetState (src, &state, &reason, 0) < 0 ||
            (state != VIR_DOMAIN_RUNNING && state != VIR_DOMAIN_PAUSED)) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_INVALID_STATE,
                             "cannot fork VM “%s”: it is neither running nor paused", d->source);
                return FALSE;
        }
        src_flags = state == VIR_DOMAIN_PAUSED ? VIR_DOMAIN_SAVE_PAUSED : VIR_DOMAIN_SAVE_RUNNING;
        if (!(src_dir = vm_dir_of (src)) || virDomainGetUUIDString (src, src_uuid) < 0) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                             "VM “%s” has no Corral metadata", d->source);
                return FALSE;
        }
        if (g_mkdir_with_parents (new_dir, 0700) < 0) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED, "cannot create %s: %s",
                             new_dir, g_strerror (errno));
                return FALSE;
        }
        d->made_dir = g_strdup (new_dir);
        /* Leftovers of a failed fork of the same name (no domain owns the folder). */
        unlink (save_path);
        {
                g_autofree char *disk = g_build_filename (new_dir, CORRAL_VM_DISK_OVERLAY, NULL);
                unlink (disk);
        }
        if (virDomainSaveFlags (src, save_path, NULL, src_flags) < 0) {
                _corral_vm_set_libvirt_error (error, CORRAL_VM_ERROR_FAILED,
                                              "saving the source VM failed");
                unlink (save_path);
                return FALSE;
        }
        if (!(saved_xml = virDomainSaveImageGetXMLDesc (conn, save_path,
                                                        VIR_DOMAIN_SAVE_IMAGE_XML_SECURE))) {
                _corral_vm_set_libvirt_error (error, CORRAL_VM_ERROR_FAILED,
                                              "reading the saved XML failed");
                if (virDomainRestoreFlags (conn, save_path, NULL, src_flags) == 0)
                        unlink (save_path);
                else
                        g_prefix_error (error, "the source VM stays saved in %s: ", save_path);
                return FALSE;
        }
        if (!copy_disk_and_restore (conn, saved_xml, src_dir, new_dir, save_path, src_flags, error))
                return FALSE;
        if (!(fork_xml = corral_vm_fork_rewrite_xml (saved_xml, src_dname, src_uuid, src_dir,
                                                     new_dname, new_uuid, new_dir, error))) {
                unlink (save_path);
                return FALSE;
        }
        if (!(fork = virDomainDefineXML (conn, fork_xml))) {
                _corral_vm_set_libvirt_error (error, CORRAL_VM_ERROR_FAILED,
                                              "defining the fork failed");
                unlink (save_path);
                return FALSE;
        }
        if (!save_image_set_xml (save_path, fork_xml, error)) {
                virDomainUndefineFlags (fork, VIR_DOMAIN_UNDEFINE_MANAGED_SAVE);
                unlink (save_path);
                return FALSE;
        }
        if (virDomainRestoreFlags (conn, save_path, NULL, VIR_DOMAIN_SAVE_RUNNING) < 0) {
                _corral_vm_set_libvirt_error (error, CORRAL_VM_ERROR_FAILED,
                                              "starting the fork from the saved state failed");
                virDomainUndefineFlags (fork, VIR_DOMAIN_UNDEFINE_MANAGED_SAVE);
                unlink (save_path);
                return FALSE;
        }
        unlink (save_path);
        return TRUE;
}

static void
fork_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
        GError *error = NULL;

        ForkData *d = data;

        if (do_fork (source, d, &error)) {
                g_task_return_boolean (task, TRUE);
                return;
        }
        if (d->made_dir) {
                const char *files[] = { CORRAL_VM_DISK_OVERLAY, SAVE_FILE, "console.log" };

                for (gsize i = 0; i < G_N_ELEMENTS (files); i++) {
                        g_autofree char *path = g_build_filename (d->made_dir, files[i], NULL);
                        unlink (path);
                }
                rmdir (d->made_dir);
        }
        g_task_return_error (task, error);
}

static void
lookup_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        GError *error = NULL;
        CorralVmInfo *info =
                corral_vm_manager_lookup_finish (CORRAL_VM_MANAGER (source), result, &error);

        if (info)
                g_task_return_pointer (task, info, (GDestroyNotify) corral_vm_info_free);
        else
                g_task_return_error (task, error);
}

static void
forked (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        ForkData *d = g_task_get_task_data (task);
        GCancellable *cancellable;
        GError *error = NULL;

        if (!g_task_propagate_boolean (G_TASK (result), &error)) {
                g_task_return_error (task, error);
                return;
        }
        cancellable = g_task_get_cancellable (task);
        corral_vm_manager_lookup_async (CORRAL_VM_MANAGER (source), d->name, cancellable,
                                        lookup_done, g_steal_pointer (&task));
}

void
corral_vm_manager_fork_async (CorralVmManager *self,
                              const char *source,
                              const char *name,
                              GCancellable *cancellable,
                              GAsyncReadyCallback callback,
                              gpointer user_data)
{
        ForkData *d = g_new0 (ForkData, 1);
        GTask *task;
        g_autoptr (GTask) inner = NULL;
        GError *error = NULL;

        g_return_if_fail (CORRAL_IS_VM_MANAGER (self) && source && name);
        d->source = g_strdup (source);
        d->name = g_strdup (name);
        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_source_tag (task, corral_vm_manager_fork_async);
        g_task_set_task_data (task, d, (GDestroyNotify) fork_data_free);
        if (_corral_vm_manager_refuse_remote (self, "forking a VM", &error)) {
                g_task_return_error (task, error);
                g_object_unref (task);
                return;
        }
        /* The save and restore are not interruptible: the inner task has no cancellable. */
        inner = g_task_new (self, NULL, forked, task);
        g_task_set_task_data (inner, d, NULL);
        g_task_run_in_thread (inner, fork_thread);
}

CorralVmInfo *
corral_vm_manager_fork_finish (CorralVmManager *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), NULL);
        return g_task_propagate_pointer (G_TASK (result), error);
}
