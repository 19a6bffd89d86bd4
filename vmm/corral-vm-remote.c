/* corral-vm-remote.c — images in a storage pool on the libvirt host, and the channel bridge.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-vm-remote.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gi18n-lib.h>
#include <libvirt/virterror.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corral-domain-xml.h"
#include "corral-paths.h"
#include "corral-spawn.h"

G_DEFINE_AUTOPTR_CLEANUP_FUNC (virStorageVol, virStorageVolFree)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (virStream, virStreamFree)

#define SYSTEM_POOL_DIR "/var/lib/libvirt/images/corral"
#define PROGRESS_MIN_BYTES (16 * 1024 * 1024)

static gboolean
libvirt_failed (GError **error, const char *what)
{
        virErrorPtr err = virGetLastError ();

        g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED, "%s: %s", what,
                     err && err->message ? err->message : "unknown libvirt error");
        return FALSE;
}

/* The pool ------------------------------------------------------------------------------------ */

/* <target><path>X</path> of a pool's XML (libvirt's own output, escaped by libvirt). */
static char *
pool_target_path (virStoragePoolPtr pool)
{
        g_autofree char *xml = virStoragePoolGetXMLDesc (pool, 0);
        const char *target, *start, *end;
        g_autofree char *escaped = NULL;

        if (!xml || !(target = strstr (xml, "<target>")) || !(start = strstr (target, "<path>")) ||
            !(end = strstr (start, "</path>")))
                return NULL;
        start += strlen ("<path>");
        escaped = g_strndup (start, (gsize) (end - start));
        /* Paths with markup in them are not worth un-escaping: refuse them below. */
        if (strchr (escaped, '&') || !corral_domain_path_is_valid (escaped))
                return NULL;
        return g_steal_pointer (&escaped);
}

static char *
choose_pool_dir (virConnectPtr conn, GError **error)
{
        g_autoptr (virStoragePool) def = virStoragePoolLookupByName (conn, "default");
        g_autofree char *uri = virConnectGetURI (conn);
        g_autofree char *dir = def ? pool_target_path (def) : NULL;

        if (dir)
                return g_build_filename (dir, CORRAL_REMOTE_POOL, NULL);
        if (uri && g_str_has_suffix (uri, "/system"))
                return g_strdup (SYSTEM_POOL_DIR);
        g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                     "the libvirt host (%s) has no storage pool “%s” or “default” for Corral's "
                     "images: define one there, e.g. “virsh -c %s pool-define-as %s dir "
                     "--target FOLDER && virsh -c %s pool-build %s”",
                     uri ? uri : "?", CORRAL_REMOTE_POOL, uri ? uri : "URI", CORRAL_REMOTE_POOL,
                     uri ? uri : "URI", CORRAL_REMOTE_POOL);
        return NULL;
}

virStoragePoolPtr
_corral_remote_pool_ensure (virConnectPtr conn, GError **error)
{
        g_autoptr (virStoragePool) pool = virStoragePoolLookupByName (conn, CORRAL_REMOTE_POOL);

        if (!pool) {
                g_autofree char *dir = choose_pool_dir (conn, error);
                g_autofree char *escaped = NULL;
                g_autofree char *xml = NULL;

                if (!dir)
                        return NULL;
                escaped = g_markup_escape_text (dir, -1);
                /* 0711 like libvirt's own images folder: QEMU's user needs to reach the files
                 * (libvirt labels each for the VM that uses it), nobody needs to list them. */
                xml = g_strdup_printf ("<pool type='dir'><name>%s</name><target><path>%s</path>"
                                       "<permissions><mode>0711</mode></permissions></target>"
                                       "</pool>",
                                       CORRAL_REMOTE_POOL, escaped);
                if (!(pool = virStoragePoolDefineXML (conn, xml, 0)))
                        return libvirt_failed (error, "defining the storage pool for Corral's "
                                                      "images failed"),
                               NULL;
                if (virStoragePoolBuild (pool, 0) < 0) {
                        libvirt_failed (error,
                                        "creating the folder of Corral's storage pool failed");
                        virStoragePoolUndefine (pool);
                        return NULL;
                }
                virStoragePoolSetAutostart (pool, 1);
        }
        if (virStoragePoolIsActive (pool) != 1 && virStoragePoolCreate (pool, 0) < 0)
                return libvirt_failed (error, "starting Corral's storage pool failed"), NULL;
        /* Once per create: someone may have added or removed files behind libvirt's back. */
        virStoragePoolRefresh (pool, 0);
        return g_steal_pointer (&pool);
}

/* Uploads ------------------------------------------------------------------------------------- */

typedef struct {
        int fd;
        guint64 sent, total;
        int percent; /* last reported */
        const char *name;
        const CorralVmSpec *spec;
} Upload;

static int
send_from_fd (virStreamPtr st, char *data, size_t nbytes, void *opaque)
{
        Upload *up = opaque;
        ssize_t n;
        int percent;

        do
                n = read (up->fd, data, nbytes);
        while (n < 0 && errno == EINTR);
        if (n <= 0 || !up->spec || !up->spec->progress)
                return (int) n;
        up->sent += (guint64) n;
        percent = (int) (up->sent * 100 / MAX (up->total, 1));
        /* Every 10 %; small files (kernel, initrd) once, when done. */
        if (percent / 10 != up->percent / 10 &&
            (percent == 100 || up->total >= PROGRESS_MIN_BYTES)) {
                g_autofree char *size = g_format_size (up->total);
                g_autofree char *text =
                        g_strdup_printf ("uploading %s (%s) to the libvirt host", up->name, size);

                up->percent = percent;
                up->spec->progress (percent / 100.0, text, up->spec->progress_data);
        }
        return (int) n;
}

static virStorageVolPtr
create_vol (virStoragePoolPtr pool, const char *name, guint64 bytes, GError **error)
{
        g_autofree char *escaped = g_markup_escape_text (name, -1);
        g_autofree char *xml = g_strdup_printf (
                "<volume><name>%s</name><capacity unit='bytes'>%" G_GUINT64_FORMAT "</capacity>"
                "<target><format type='raw'/><permissions><mode>0600</mode></permissions>"
                "</target></volume>",
                escaped, bytes);
        virStorageVolPtr vol = virStorageVolCreateXML (pool, xml, 0);

        if (!vol)
                libvirt_failed (error, "creating a volume in Corral's storage pool failed");
        return vol;
}

static gboolean
delete_vol (virStoragePoolPtr pool, const char *name)
{
        g_autoptr (virStorageVol) vol = virStorageVolLookupByName (pool, name);

        return !vol || virStorageVolDelete (vol, 0) == 0;
}

char *
_corral_remote_upload (virStoragePoolPtr pool,
                       const char *local_path,
                       const char *vol_name,
                       const CorralVmSpec *spec,
                       GError **error)
{
        g_autofree char *done_name = g_strconcat (vol_name, ".done", NULL);
        g_autoptr (virStorageVol) done = NULL;
        g_autoptr (virStorageVol) vol = NULL;
        g_autoptr (virStream) st = NULL;
        g_autofd int fd = -1;
        g_autofree char *base = g_path_get_basename (local_path);
        Upload up = { .spec = spec, .name = base, .percent = -10 };
        struct stat sb;

        if ((vol = virStorageVolLookupByName (pool, vol_name)) &&
            (done = virStorageVolLookupByName (pool, done_name)))
                return virStorageVolGetPath (vol);
        /* Absent, or an upload that did not finish (or a marker left without its image). */
        if ((vol && virStorageVolDelete (vol, 0) < 0) || !delete_vol (pool, done_name))
                return libvirt_failed (error, "removing an unfinished upload failed"), NULL;
        g_clear_pointer (&vol, virStorageVolFree);

        fd = open (local_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 || fstat (fd, &sb) < 0) {
                int errsv = errno;
                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv), "%s: %s", local_path,
                             g_strerror (errsv));
                return NULL;
        }
        if (!(vol = create_vol (pool, vol_name, (guint64) sb.st_size, error)))
                return NULL;
        up.fd = fd;
        up.total = (guint64) sb.st_size;
        st = virStreamNew (virStoragePoolGetConnect (pool), 0);
        if (!st || virStorageVolUpload (vol, st, 0, (unsigned long long) sb.st_size, 0) < 0 ||
            virStreamSendAll (st, send_from_fd, &up) < 0 || virStreamFinish (st) < 0) {
                g_autofree char *what =
                        g_strdup_printf ("uploading %s to the libvirt host failed", local_path);
                libvirt_failed (error, what);
                if (st)
                        virStreamAbort (st);
                virStorageVolDelete (vol, 0);
                return NULL;
        }
        g_clear_pointer (&done, virStorageVolFree);
        if (!(done = create_vol (pool, done_name, 0, error)))
                return NULL;
        return virStorageVolGetPath (vol);
}

/* qcow2 header: the virtual size is the big-endian u64 at offset 24. */
static gboolean
qcow2_virtual_size (const char *path, guint64 *ret_size, GError **error)
{
        g_autofd int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        guint8 hdr[32];
        guint64 size = 0;

        if (fd < 0 || pread (fd, hdr, sizeof hdr, 0) != (ssize_t) sizeof hdr ||
            memcmp (hdr, "QFI\xfb", 4) != 0) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                             "%s is not a qcow2 image", path);
                return FALSE;
        }
        for (int i = 24; i < 32; i++)
                size = (size << 8) | hdr[i];
        *ret_size = size;
        return TRUE;
}

char *
_corral_remote_overlay_create (virStoragePoolPtr pool,
                               const char *vol_name,
                               const char *backing,
                               const char *local_base,
                               GError **error)
{
        g_autofree char *name = g_markup_escape_text (vol_name, -1);
        g_autofree char *path = g_markup_escape_text (backing, -1);
        g_autofree char *xml = NULL;
        g_autoptr (virStorageVol) vol = NULL;
        guint64 size;

        if (!qcow2_virtual_size (local_base, &size, error))
                return NULL;
        /* A leftover from a failed create of the same name (no domain owns it). */
        if (!delete_vol (pool, vol_name))
                return libvirt_failed (error, "removing an old disk of this VM failed"), NULL;
        xml = g_strdup_printf ("<volume><name>%s</name><capacity unit='bytes'>%" G_GUINT64_FORMAT
                               "</capacity><target><format type='qcow2'/><permissions><mode>0600"
                               "</mode></permissions></target><backingStore><path>%s</path>"
                               "<format type='qcow2'/></backingStore></volume>",
                               name, size, path);
        if (!(vol = virStorageVolCreateXML (pool, xml, 0)))
                return libvirt_failed (error, "creating the VM's disk on the libvirt host failed"),
                       NULL;
        return virStorageVolGetPath (vol);
}

gboolean
_corral_remote_volume_delete (virConnectPtr conn, const char *vol_name, GError **error)
{
        g_autoptr (virStoragePool) pool = virStoragePoolLookupByName (conn, CORRAL_REMOTE_POOL);

        if (!pool)
                return TRUE;
        if (!delete_vol (pool, vol_name))
                return libvirt_failed (error, "removing the VM's disk on the libvirt host failed");
        return TRUE;
}

char *
_corral_remote_disk_volume_name (const char *name)
{
        return g_strdup_printf ("corral-vm-%s.qcow2", name);
}

/* A VM's image and disk there ----------------------------------------------------------------- */

gboolean
_corral_remote_prepare (virConnectPtr conn, const char *uri, CorralVmSpec *spec, GError **error)
{
        static GMutex upload_lock;
        G_GNUC_UNUSED g_autoptr (GMutexLocker) locker = NULL;
        g_autoptr (virStoragePool) pool = NULL;
        g_autofree char *prefix = NULL;
        const char *local[] = { spec->kernel, spec->initrd, spec->disk };
        char *remote[G_N_ELEMENTS (local)] = { NULL };
        g_autofree char *disk_vol = _corral_remote_disk_volume_name (spec->name);
        g_autofree char *overlay = NULL;
        gboolean ok = TRUE;

        if (spec->vnc) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                             "the desktop view needs the VM on this machine; over a remote "
                             "libvirt connection (%s) it is not available",
                             uri);
                return FALSE;
        }
        if (!(pool = _corral_remote_pool_ensure (conn, error)))
                return FALSE;
        /* VMs created side by side (a warm pool filling) upload each image once, in turn. */
        locker = g_mutex_locker_new (&upload_lock);
        /* The manifest's digest names the image's contents (it lists every artifact's). */
        if (spec->manifest_sha256)
                prefix = g_strdup_printf ("corral-%s-%.16s", spec->image_name,
                                          spec->manifest_sha256);
        for (gsize i = 0; ok && i < G_N_ELEMENTS (local); i++) {
                g_autofree char *base = NULL;
                g_autofree char *vol = NULL;

                if (!local[i])
                        continue;
                base = g_path_get_basename (local[i]);
                if (prefix) {
                        vol = g_strdup_printf ("%s-%s", prefix, base);
                } else {
                        /* No manifest: the file's own digest. */
                        g_autoptr (GMappedFile) mf = g_mapped_file_new (local[i], FALSE, error);
                        g_autofree char *sum = NULL;

                        if (!mf) {
                                ok = FALSE;
                                break;
                        }
                        sum = g_compute_checksum_for_data (
                                G_CHECKSUM_SHA256, (const guchar *) g_mapped_file_get_contents (mf),
                                g_mapped_file_get_length (mf));
                        vol = g_strdup_printf ("corral-%.16s-%s", sum, base);
                }
                if (!corral_domain_name_is_valid (vol)) {
                        g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                                     "cannot name a volume for %s on the libvirt host", local[i]);
                        ok = FALSE;
                        break;
                }
                remote[i] = _corral_remote_upload (pool, local[i], vol, spec, error);
                ok = remote[i] != NULL;
        }
        if (ok && remote[2])
                ok = (overlay = _corral_remote_overlay_create (pool, disk_vol, remote[2],
                                                               spec->disk, error)) != NULL;
        if (ok) {
                g_free ((char *) spec->kernel);
                g_free ((char *) spec->initrd);
                g_free ((char *) spec->disk);
                spec->kernel = g_steal_pointer (&remote[0]);
                spec->initrd = g_steal_pointer (&remote[1]);
                spec->disk = g_steal_pointer (&overlay);
        }
        for (gsize i = 0; i < G_N_ELEMENTS (remote); i++)
                g_free (remote[i]);
        return ok;
}

/* The bridge ---------------------------------------------------------------------------------- */

const char *
_corral_remote_bridge_path (void)
{
        return corral_paths_helper (CORRAL_HELPER_CHANBRIDGE);
}

/* Whether a bridge holds the VM's lock (a probe: the bridge takes it itself, race-free). */
static gboolean
bridge_running (const char *lock)
{
        g_autofd int fd = open (lock, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

        if (fd < 0)
                return FALSE;
        if (flock (fd, LOCK_EX | LOCK_NB) == 0) {
                flock (fd, LOCK_UN);
                return FALSE;
        }
        return errno == EWOULDBLOCK;
}

gboolean
_corral_remote_bridge_ensure (const char *uri,
                              const char *domain_name,
                              const char *vm_dir,
                              GError **error)
{
        g_autofree char *lock = g_build_filename (vm_dir, "bridge.lock", NULL);
        g_autofree char *log = g_build_filename (vm_dir, "bridge.log", NULL);
        g_autofree char *console = g_build_filename (vm_dir, "console.log", NULL);
        g_autofree char *agent = g_build_filename (vm_dir, "agent.sock", NULL);
        g_autofree char *agent_arg = g_strconcat (CORRAL_AGENT_PORT_NAME "=", agent, NULL);
        g_autofree char *fs_arg = g_strconcat (CORRAL_FS_PORT_NAME "=", vm_dir, "/fs.sock", NULL);
        g_autofree char *net_arg =
                g_strconcat (CORRAL_NET_PORT_NAME "=", vm_dir, "/net.sock", NULL);
        const char *argv[] = { _corral_remote_bridge_path (),
                               "--uri",
                               uri,
                               "--domain",
                               domain_name,
                               "--lock",
                               lock,
                               "--console",
                               console,
                               agent_arg,
                               fs_arg,
                               net_arg,
                               NULL };

        if (g_mkdir_with_parents (vm_dir, 0700) < 0) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED, "cannot create %s: %s",
                             vm_dir, g_strerror (errno));
                return FALSE;
        }
        if (!bridge_running (lock) &&
            !corral_spawn_detached (vm_dir, argv, log, _ ("Cannot start the channel bridge: %s"),
                                    error))
                return FALSE;
        /* It listens within a moment of connecting to libvirt. */
        for (int i = 0; i < 400; i++) {
                if (g_file_test (agent, G_FILE_TEST_EXISTS) && bridge_running (lock))
                        return TRUE;
                g_usleep (25 * 1000);
        }
        g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_UNREACHABLE,
                     "the channel bridge to the VM did not start: see %s", log);
        return FALSE;
}
