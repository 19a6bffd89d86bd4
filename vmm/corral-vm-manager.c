/* corral-vm-manager.c — libvirt domains for Corral VMs (see the header).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-vm-manager.h"

#include "corral-policy.h"
#include "corral-shm.h"
#include "corral-vm-private.h"

#include "corral-vsock.h"

#include "corral-glib-compat.h"
#include "corral-agent-ops.h"
#include "corral-process.h"
#include "corral-unix.h"
#include "corral-vm-disk.h"
#include "corral-vm-pool-record.h"
#include "corral-vm-remote.h"

#include <errno.h>
#include <fcntl.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define DEFAULT_CMDLINE "console=ttyS0 quiet panic=-1"
#define CONSOLE_TAIL 2048
#define CONNECT_RETRY_MS 200
#define AGENT_POWEROFF_GRACE_MS 10000

struct _CorralVmManager {
        GObject parent_instance;
        virConnectPtr conn;
        CorralHostSelection *sel;
};

G_DEFINE_FINAL_TYPE (CorralVmManager, corral_vm_manager, G_TYPE_OBJECT)

G_DEFINE_AUTOPTR_CLEANUP_FUNC (virDomain, virDomainFree)

static void
corral_vm_manager_finalize (GObject *object)
{
        CorralVmManager *self = CORRAL_VM_MANAGER (object);

        if (self->conn)
                virConnectClose (self->conn);
        corral_host_selection_free (self->sel);
        G_OBJECT_CLASS (corral_vm_manager_parent_class)->finalize (object);
}

static void
corral_vm_manager_class_init (CorralVmManagerClass *klass)
{
        G_OBJECT_CLASS (klass)->finalize = corral_vm_manager_finalize;
}

static void
corral_vm_manager_init (CorralVmManager *self)
{
}

const char *
corral_vm_state_to_string (CorralVmState state)
{
        switch (state) {
        case CORRAL_VM_STATE_SHUTOFF:
                return "shut off";
        case CORRAL_VM_STATE_RUNNING:
                return "running";
        case CORRAL_VM_STATE_PAUSED:
                return "paused";
        case CORRAL_VM_STATE_SAVED:
                return "saved";
        case CORRAL_VM_STATE_CRASHED:
                return "crashed";
        case CORRAL_VM_STATE_OTHER:
        default:
                return "other";
        }
}

void
corral_vm_info_free (CorralVmInfo *info)
{
        if (!info)
                return;
        g_free (info->name);
        g_free (info->domain_name);
        g_free (info->transport);
        g_free (info->accel);
        g_free (info->image_name);
        g_free (info->agent_socket);
        g_free (info->console_log);
        g_free (info->vm_dir);
        g_free (info->alias);
        g_free (info);
}

const char *
corral_vm_info_get_user_name (const CorralVmInfo *info)
{
        return info->alias ? info->alias : info->name;
}

/* libvirt plumbing ---------------------------------------------------------------------------- */

static void
ignore_libvirt_error (void *data, virErrorPtr error)
{
        /* Errors are reported through GError; libvirt's default handler would print them. */
}

static gint embedded_opened;

gboolean
corral_vm_manager_embedded_opened (void)
{
        return g_atomic_int_get (&embedded_opened);
}

void
corral_vm_manager_quiet_libvirt_logs (void)
{
        g_setenv ("LIBVIRT_LOG_OUTPUTS", "1:file:/dev/null", FALSE);
}

/* The embedded driver needs an event loop. libvirt's default implementation is GLib's default
 * main context, which the application iterates anyway (a thread of our own iterating it too
 * would steal the application's dispatches); QEMU monitors have their own libvirt threads. */
static gpointer
libvirt_init_once (gpointer data)
{
        virSetErrorFunc (NULL, ignore_libvirt_error);
        virInitialize ();
        virEventRegisterDefaultImpl ();
        return NULL;
}

static char *
domain_name_for (const char *name)
{
        return g_strconcat (CORRAL_DOMAIN_PREFIX, name, NULL);
}

static virDomainPtr
find_domain (CorralVmManager *self, const char *name, GError **error)
{
        g_autofree char *dname = domain_name_for (name);
        virDomainPtr dom;

        if (!corral_domain_name_is_valid (dname)) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_NO_SUCH_VM,
                             "“%s” is not a valid VM name", name);
                return NULL;
        }
        dom = virDomainLookupByName (self->conn, dname);
        if (!dom) {
                virErrorPtr err = virGetLastError ();
                gboolean no_domain = err && err->code == VIR_ERR_NO_DOMAIN;

                /* A warm-pool VM handed out under this name (corral-vm-pool-record.h). */
                if (no_domain && (dom = _corral_pool_lookup_alias (self->conn, name)))
                        return dom;
                if (no_domain)
                        g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_NO_SUCH_VM,
                                     "no such VM: “%s” (see “corralctl vm ls”)", name);
                else
                        _corral_vm_set_libvirt_error (error, CORRAL_VM_ERROR_FAILED,
                                                      "lookup failed");
        }
        return dom;
}

CorralVmState
_corral_vm_domain_state (virDomainPtr dom)
{
        int state = 0, reason = 0;

        if (virDomainGetState (dom, &state, &reason, 0) < 0)
                return CORRAL_VM_STATE_OTHER;
        switch (state) {
        case VIR_DOMAIN_RUNNING:
                return CORRAL_VM_STATE_RUNNING;
        case VIR_DOMAIN_PAUSED:
                return CORRAL_VM_STATE_PAUSED;
        case VIR_DOMAIN_CRASHED:
                return CORRAL_VM_STATE_CRASHED;
        case VIR_DOMAIN_SHUTOFF:
                if (reason == VIR_DOMAIN_SHUTOFF_CRASHED)
                        return CORRAL_VM_STATE_CRASHED;
                return virDomainHasManagedSaveImage (dom, 0) > 0 ? CORRAL_VM_STATE_SAVED
                                                                 : CORRAL_VM_STATE_SHUTOFF;
        default:
                return CORRAL_VM_STATE_OTHER;
        }
}

static CorralVmInfo *
domain_info (virDomainPtr dom)
{
        CorralVmInfo *info = g_new0 (CorralVmInfo, 1);
        const char *dname = virDomainGetName (dom);
        g_autofree char *meta_xml =
                virDomainGetMetadata (dom, VIR_DOMAIN_METADATA_ELEMENT, CORRAL_METADATA_NS, 0);
        g_autoptr (CorralDomainMetadata) meta = NULL;
        virDomainInfo vinfo = { 0 };

        info->domain_name = g_strdup (dname);
        info->name = g_strdup (dname + strlen (CORRAL_DOMAIN_PREFIX));
        info->state = _corral_vm_domain_state (dom);
        if (virDomainGetInfo (dom, &vinfo) == 0) {
                info->memory_mib = (guint) (vinfo.maxMem / 1024);
                info->vcpus = vinfo.nrVirtCpu;
        }
        if (meta_xml)
                meta = corral_domain_metadata_parse (meta_xml, NULL);
        info->transport = g_strdup (meta && meta->transport ? meta->transport : "?");
        info->accel = g_strdup (meta && meta->accel ? meta->accel : "?");
        info->image_name = g_strdup (meta && meta->image_name ? meta->image_name : "?");
        if (meta) {
                info->agent_socket = g_steal_pointer (&meta->agent_socket);
                info->console_log = g_steal_pointer (&meta->console_log);
                info->vm_dir = g_steal_pointer (&meta->vm_dir);
        }
        if (g_str_has_prefix (info->name, CORRAL_POOL_VM_PREFIX)) {
                CorralPoolRecord pool;

                _corral_pool_record_read (dom, &pool);
                info->alias = pool.alias;
        }
        /* panic=-1 reboots on a kernel panic and on_reboot=destroy makes that a plain stop, so
         * libvirt says "shut off"; the console says why. (The guest writes that log, so a guest
         * can only make itself look crashed, which changes nothing but the label.) */
        if (info->state == CORRAL_VM_STATE_SHUTOFF) {
                g_autofree char *tail = corral_vm_info_read_console_tail (info, 4096);

                if (tail && strstr (tail, "Kernel panic"))
                        info->state = CORRAL_VM_STATE_CRASHED;
        }
        return info;
}

char *
corral_vm_info_read_console_tail (const CorralVmInfo *info, gsize max_bytes)
{
        g_autofd int fd = -1;
        g_autofree char *buf = NULL;
        off_t size;
        gssize n;

        if (!info->console_log)
                return NULL;
        fd = open (info->console_log, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 || (size = lseek (fd, 0, SEEK_END)) < 0)
                return NULL;
        if (lseek (fd, size > (off_t) max_bytes ? size - (off_t) max_bytes : 0, SEEK_SET) < 0)
                return NULL;
        buf = g_malloc0 (max_bytes + 1);
        n = read (fd, buf, max_bytes);
        if (n < 0)
                return NULL;
        /* The guest wrote it: keep it printable. */
        for (gssize i = 0; i < n; i++)
                if ((guchar) buf[i] < 0x20 && buf[i] != '\n' && buf[i] != '\t')
                        buf[i] = '?';
        return g_utf8_make_valid (buf, n);
}

/* Threads ------------------------------------------------------------------------------------- */

typedef struct {
        char *name;
        CorralVmOp op;
        guint timeout_ms;
        gboolean agent_poweroff; /* stop: the agent was asked to power off */
        CorralVmSpec spec; /* create: owned copies */
        CorralHostSelection *sel;
} OpData;

static void
op_data_free (OpData *d)
{
        g_free (d->name);
        g_free ((char *) d->spec.name);
        g_free ((char *) d->spec.kernel);
        g_free ((char *) d->spec.initrd);
        g_free ((char *) d->spec.cmdline);
        g_free ((char *) d->spec.image_name);
        g_free ((char *) d->spec.manifest_sha256);
        g_free ((char *) d->spec.disk);
        corral_host_selection_free (d->sel);
        g_free (d);
}

static GTask *
op_task (gpointer source, OpData *d, GCancellable *cancellable, GAsyncReadyCallback cb, gpointer ud)
{
        GTask *task = g_task_new (source, cancellable, cb, ud);

        g_task_set_task_data (task, d, (GDestroyNotify) op_data_free);
        return task;
}

static CorralHostSelection *
selection_copy (const CorralHostSelection *sel)
{
        CorralHostSelection *copy = g_new0 (CorralHostSelection, 1);

        copy->uri = g_strdup (sel->uri);
        copy->embed_root = g_strdup (sel->embed_root);
        copy->state_dir = g_strdup (sel->state_dir);
        copy->accel = sel->accel;
        copy->accel_forced = sel->accel_forced;
        copy->transport = sel->transport;
        copy->remote = sel->remote;
        copy->qemu_as_root = sel->qemu_as_root;
        return copy;
}

/* The embedded driver lets one process at a time use its root folder; the one that does has
 * its pid in the driver's pid file. Returns: (transfer full) (nullable) its command line. */
static char *
embed_holder (const char *embed_root, pid_t *ret_pid)
{
        g_autofree char *pidfile = g_build_filename (embed_root, "run", "qemu", "driver.pid", NULL);
        g_autofree char *text = NULL;
        g_autofree char *proc = NULL;
        g_autofree char *cmdline = NULL;
        gsize len = 0;
        gint64 pid;

        if (!g_file_get_contents (pidfile, &text, NULL, NULL))
                return NULL;
        pid = g_ascii_strtoll (g_strstrip (text), NULL, 10);
        if (pid <= 0 || pid == getpid ())
                return NULL;
        proc = g_strdup_printf ("/proc/%" G_GINT64_FORMAT "/cmdline", pid);
        if (!g_file_get_contents (proc, &cmdline, &len, NULL) || len == 0)
                return NULL;
        /* Arguments are NUL-separated; whatever it is, print it on one line. */
        for (gsize i = 0; i < len; i++)
                if (cmdline[i] == '\0' || (guchar) cmdline[i] < 0x20)
                        cmdline[i] = ' ';
        *ret_pid = (pid_t) pid;
        return g_utf8_make_valid (g_strstrip (cmdline), -1);
}

static GError *
unreachable_error (const CorralHostSelection *sel)
{
        virErrorPtr err = virGetLastError ();
        const char *why = err && err->message ? err->message : "unknown error";
        g_autofree char *holder = NULL;
        pid_t pid = 0;

        if (sel->embed_root && strstr (why, "pid file") &&
            (holder = embed_holder (sel->embed_root, &pid)))
                return g_error_new (
                        CORRAL_VM_ERROR, CORRAL_VM_ERROR_UNREACHABLE,
                        "another program uses Corral's VMs right now: “%s” (process %d); wait "
                        "for it to end or stop it. With the libvirt daemon running (systemctl "
                        "start libvirtd.socket), several programs can use them at once",
                        holder, (int) pid);
        return g_error_new (CORRAL_VM_ERROR, CORRAL_VM_ERROR_UNREACHABLE,
                            "libvirt is not reachable at %s: %s (is libvirt installed, and for "
                            "qemu:///system is libvirtd running? CORRAL_LIBVIRT_URI picks another "
                            "URI)",
                            sel->uri, why);
}

static void
open_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
        static GOnce once = G_ONCE_INIT;
        OpData *d = data;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralVmManager) self = NULL;
        g_autofree char *vms = NULL;

        if (!d->sel && !(d->sel = corral_host_select_default (&error))) {
                g_task_return_error (task, g_steal_pointer (&error));
                return;
        }
        if (!corral_host_prepare (d->sel, &error)) {
                g_task_return_error (task, g_steal_pointer (&error));
                return;
        }
        vms = g_build_filename (d->sel->state_dir, "vms", NULL);
        g_mkdir_with_parents (vms, 0700);
        g_once (&once, libvirt_init_once, NULL);
        self = g_object_new (CORRAL_TYPE_VM_MANAGER, NULL);
        if (g_str_has_prefix (d->sel->uri, "qemu:///embed"))
                g_atomic_int_set (&embedded_opened, TRUE);
        self->conn = virConnectOpen (d->sel->uri);
        if (!self->conn) {
                g_task_return_error (task, unreachable_error (d->sel));
                return;
        }
        self->sel = g_steal_pointer (&d->sel);
        if (self->sel->remote && !self->sel->accel_forced) {
                /* KVM is a property of that host: its capabilities list a kvm domain type. */
                g_autofree char *caps = virConnectGetCapabilities (self->conn);

                self->sel->accel = caps && strstr (caps, "<domain type='kvm'") ? CORRAL_ACCEL_KVM
                                                                               : CORRAL_ACCEL_TCG;
        }
        g_task_return_pointer (task, g_steal_pointer (&self), g_object_unref);
}

void
corral_vm_manager_open_async (const CorralHostSelection *sel,
                              GCancellable *cancellable,
                              GAsyncReadyCallback callback,
                              gpointer user_data)
{
        OpData *d = g_new0 (OpData, 1);
        g_autoptr (GTask) task = NULL;

        d->sel = sel ? selection_copy (sel) : NULL;
        task = op_task (NULL, d, cancellable, callback, user_data);
        g_task_set_source_tag (task, corral_vm_manager_open_async);
        g_task_run_in_thread (task, open_thread);
}

CorralVmManager *
corral_vm_manager_open_finish (GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, NULL), NULL);
        return g_task_propagate_pointer (G_TASK (result), error);
}

virConnectPtr
_corral_vm_manager_get_conn (CorralVmManager *self)
{
        g_return_val_if_fail (CORRAL_IS_VM_MANAGER (self), NULL);
        return self->conn;
}

const CorralHostSelection *
corral_vm_manager_get_selection (CorralVmManager *self)
{
        g_return_val_if_fail (CORRAL_IS_VM_MANAGER (self), NULL);
        return self->sel;
}

/* Create -------------------------------------------------------------------------------------- */

static char *
build_xml (CorralVmManager *self, const CorralVmSpec *spec, const char *vm_dir, GError **error)
{
        g_autofree char *dname = domain_name_for (spec->name);
        g_autofree char *uuid = g_uuid_string_random ();
        g_autofree char *sock = g_build_filename (vm_dir, "agent.sock", NULL);
        g_autofree char *log = g_build_filename (vm_dir, "console.log", NULL);
        g_autofree char *vnc = g_build_filename (vm_dir, "vnc.sock", NULL);
        g_autofree char *fs = g_build_filename (vm_dir, "fs.sock", NULL);
        g_autofree char *net = g_build_filename (vm_dir, "net.sock", NULL);
        g_autofree char *fs_shm = corral_fs_shm_name (vm_dir);
        CorralDomainConfig c = {
                .name = dname,
                .uuid = uuid,
                .memory_mib = spec->memory_mib ? spec->memory_mib : 512,
                .vcpus = spec->vcpus ? spec->vcpus : 2,
                .accel = self->sel->accel,
                .kernel = spec->kernel,
                .initrd = spec->initrd,
                .cmdline = spec->cmdline ? spec->cmdline : DEFAULT_CMDLINE,
                .disk = spec->disk,
                .transport = self->sel->transport,
                .agent_socket =
                        self->sel->transport == CORRAL_TRANSPORT_VIRTIO_SERIAL ? sock : NULL,
                .console_log = log,
                /* Every VM gets the shared-folder port, so folders can be shared later. */
                .fs_socket = fs,
                /* ... and the network port, so its network can be turned on later. */
                .net_socket = net,
                /* Memory shared with corral-fsd needs QEMU on this machine. */
                .fs_shm_name = self->sel->remote ? NULL : fs_shm,
                .fs_shm_mib = CORRAL_FS_SHM_MIB,
                .qemu_as_root = self->sel->qemu_as_root,
                .vnc_socket = spec->vnc ? vnc : NULL,
                .display_width = spec->vnc ? spec->display_width : 0,
                .display_height = spec->vnc ? spec->display_height : 0,
                .clipboard = spec->vnc && spec->clipboard,
                .image_name = spec->image_name,
                .manifest_sha256 = spec->manifest_sha256,
                .vm_dir = vm_dir,
                .remote = self->sel->remote,
        };

        return corral_domain_xml_build (&c, error);
}

static gboolean
start_domain (CorralVmManager *self, virDomainPtr dom, const char *what, GError **error);

static void
create_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
        CorralVmManager *self = source;
        OpData *d = data;
        g_autoptr (GError) error = NULL;
        g_autofree char *dname = domain_name_for (d->spec.name);
        g_autofree char *vm_dir =
                g_build_filename (self->sel->state_dir, "vms", d->spec.name, NULL);
        g_autofree char *xml = NULL;
        g_autoptr (virDomain) existing = NULL;
        g_autoptr (virDomain) dom = NULL;

        if (!corral_domain_name_is_valid (dname) || strchr (d->spec.name, '/')) {
                g_task_return_new_error (task, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                                         "“%s” is not a valid VM name: use at most %d of "
                                         "A-Z a-z 0-9 _ . -",
                                         d->spec.name,
                                         (int) (CORRAL_NAME_MAX - strlen (CORRAL_DOMAIN_PREFIX)));
                return;
        }
        existing = virDomainLookupByName (self->conn, dname);
        if (existing) {
                g_task_return_new_error (task, CORRAL_VM_ERROR, CORRAL_VM_ERROR_EXISTS,
                                         "a VM called “%s” already exists", d->spec.name);
                return;
        }
        if (self->sel->remote) {
                if (!_corral_remote_prepare (self->conn, self->sel->uri, &d->spec, &error)) {
                        g_task_return_error (task, g_steal_pointer (&error));
                        return;
                }
        } else if (d->spec.disk &&
                   !_corral_vm_disk_prepare (vm_dir, (char **) &d->spec.disk, &error)) {
                /* Disk-backed images: the VM gets its own overlay; the base is never written. */
                g_task_return_error (task, g_steal_pointer (&error));
                return;
        }
        if (!(xml = build_xml (self, &d->spec, vm_dir, &error))) {
                g_task_return_error (task, g_steal_pointer (&error));
                return;
        }
        if (g_mkdir_with_parents (vm_dir, 0700) < 0) {
                g_task_return_new_error (task, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                                         "cannot create %s: %s", vm_dir, g_strerror (errno));
                return;
        }
        if (!(dom = virDomainDefineXML (self->conn, xml))) {
                _corral_vm_set_libvirt_error (&error, CORRAL_VM_ERROR_FAILED,
                                              "defining the VM failed");
                g_task_return_error (task, g_steal_pointer (&error));
                return;
        }
        if (!start_domain (self, dom, "starting the VM failed", &error)) {
                if (virDomainIsActive (dom) == 1)
                        virDomainDestroy (dom);
                virDomainUndefine (dom);
                g_task_return_error (task, g_steal_pointer (&error));
                return;
        }
        g_task_return_pointer (task, domain_info (dom), (GDestroyNotify) corral_vm_info_free);
}

void
corral_vm_manager_create_async (CorralVmManager *self,
                                const CorralVmSpec *spec,
                                GCancellable *cancellable,
                                GAsyncReadyCallback callback,
                                gpointer user_data)
{
        OpData *d = g_new0 (OpData, 1);
        g_autoptr (GTask) task = NULL;

        g_return_if_fail (CORRAL_IS_VM_MANAGER (self));
        g_return_if_fail (spec && spec->name && spec->kernel && spec->initrd && spec->image_name);

        d->spec = *spec;
        d->spec.name = g_strdup (spec->name);
        d->spec.kernel = g_strdup (spec->kernel);
        d->spec.initrd = g_strdup (spec->initrd);
        d->spec.cmdline = g_strdup (spec->cmdline);
        d->spec.image_name = g_strdup (spec->image_name);
        d->spec.manifest_sha256 = g_strdup (spec->manifest_sha256);
        d->spec.disk = g_strdup (spec->disk);
        task = op_task (self, d, cancellable, callback, user_data);
        g_task_run_in_thread (task, create_thread);
}

CorralVmInfo *
corral_vm_manager_create_finish (CorralVmManager *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), NULL);
        return g_task_propagate_pointer (G_TASK (result), error);
}

/* Lookup and list ----------------------------------------------------------------------------- */

static void
lookup_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
        OpData *d = data;
        GError *error = NULL;
        g_autoptr (virDomain) dom = find_domain (source, d->name, &error);

        if (!dom)
                g_task_return_error (task, error);
        else
                g_task_return_pointer (task, domain_info (dom),
                                       (GDestroyNotify) corral_vm_info_free);
}

void
corral_vm_manager_lookup_async (CorralVmManager *self,
                                const char *name,
                                GCancellable *cancellable,
                                GAsyncReadyCallback callback,
                                gpointer user_data)
{
        OpData *d = g_new0 (OpData, 1);
        g_autoptr (GTask) task = NULL;

        g_return_if_fail (CORRAL_IS_VM_MANAGER (self) && name);
        d->name = g_strdup (name);
        task = op_task (self, d, cancellable, callback, user_data);
        g_task_run_in_thread (task, lookup_thread);
}

CorralVmInfo *
corral_vm_manager_lookup_finish (CorralVmManager *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), NULL);
        return g_task_propagate_pointer (G_TASK (result), error);
}

static int
compare_info (gconstpointer a, gconstpointer b)
{
        const CorralVmInfo *ia = *(CorralVmInfo *const *) a;
        const CorralVmInfo *ib = *(CorralVmInfo *const *) b;

        return strcmp (ia->name, ib->name);
}

static void
list_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
        CorralVmManager *self = source;
        virDomainPtr *doms = NULL;
        g_autoptr (GPtrArray) infos =
                g_ptr_array_new_with_free_func ((GDestroyNotify) corral_vm_info_free);
        int n = virConnectListAllDomains (self->conn, &doms, 0);
        GError *error = NULL;

        if (n < 0) {
                _corral_vm_set_libvirt_error (&error, CORRAL_VM_ERROR_FAILED, "listing VMs failed");
                g_task_return_error (task, error);
                return;
        }
        for (int i = 0; i < n; i++) {
                if (g_str_has_prefix (virDomainGetName (doms[i]), CORRAL_DOMAIN_PREFIX))
                        g_ptr_array_add (infos, domain_info (doms[i]));
                virDomainFree (doms[i]);
        }
        free (doms);
        g_ptr_array_sort (infos, compare_info);
        g_task_return_pointer (task, g_steal_pointer (&infos), (GDestroyNotify) g_ptr_array_unref);
}

void
corral_vm_manager_list_async (CorralVmManager *self,
                              GCancellable *cancellable,
                              GAsyncReadyCallback callback,
                              gpointer user_data)
{
        g_autoptr (GTask) task = NULL;

        g_return_if_fail (CORRAL_IS_VM_MANAGER (self));
        task = op_task (self, g_new0 (OpData, 1), cancellable, callback, user_data);
        g_task_run_in_thread (task, list_thread);
}

GPtrArray *
corral_vm_manager_list_finish (CorralVmManager *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), NULL);
        return g_task_propagate_pointer (G_TASK (result), error);
}

/* Lifecycle operations ------------------------------------------------------------------------ */

static gboolean
need_state (
        virDomainPtr dom, const char *name, CorralVmState wanted, const char *doing, GError **error)
{
        CorralVmState state = _corral_vm_domain_state (dom);

        if (state == wanted)
                return TRUE;
        g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_INVALID_STATE,
                     "cannot %s VM “%s”: it is %s", doing, name, corral_vm_state_to_string (state));
        return FALSE;
}

static gboolean
remove_dir (const char *vm_dir, GError **error)
{
        g_autoptr (GDir) dir = NULL;
        const char *entry;

        if (!vm_dir || !g_file_test (vm_dir, G_FILE_TEST_IS_DIR))
                return TRUE;
        if (!(dir = g_dir_open (vm_dir, 0, error)))
                return FALSE;
        /* The folder is flat (socket, log, overlay); nothing in it is a directory. */
        while ((entry = g_dir_read_name (dir))) {
                g_autofree char *path = g_build_filename (vm_dir, entry, NULL);
                if (unlink (path) < 0 && errno != ENOENT) {
                        g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                                     "cannot remove %s: %s", path, g_strerror (errno));
                        return FALSE;
                }
        }
        if (rmdir (vm_dir) < 0 && errno != ENOENT) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED, "cannot remove %s: %s",
                             vm_dir, g_strerror (errno));
                return FALSE;
        }
        return TRUE;
}

static gboolean
ensure_bridge (CorralVmManager *self, virDomainPtr dom, GError **error)
{
        g_autoptr (CorralVmInfo) info = domain_info (dom);

        if (!info->vm_dir) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                             "VM “%s” has no Corral metadata", info->name);
                return FALSE;
        }
        return _corral_remote_bridge_ensure (self->sel->uri, info->domain_name, info->vm_dir,
                                             error);
}

/* Starts (or restores) dom. A remote VM starts paused until its bridge listens, so the copy of
 * its console (a pty there, lost while nobody reads it) has the boot from the first line. */
static gboolean
start_domain (CorralVmManager *self, virDomainPtr dom, const char *what, GError **error)
{
        if (virDomainCreateWithFlags (dom, self->sel->remote ? VIR_DOMAIN_START_PAUSED : 0) < 0) {
                _corral_vm_set_libvirt_error (error, CORRAL_VM_ERROR_FAILED, what);
                return FALSE;
        }
        if (!self->sel->remote)
                return TRUE;
        if (!ensure_bridge (self, dom, error))
                return FALSE;
        if (virDomainResume (dom) < 0) {
                _corral_vm_set_libvirt_error (error, CORRAL_VM_ERROR_FAILED, what);
                return FALSE;
        }
        return TRUE;
}

static gboolean
do_remove (CorralVmManager *self, virDomainPtr dom, GError **error)
{
        g_autoptr (CorralVmInfo) info = domain_info (dom);

        if (virDomainIsActive (dom) == 1 && virDomainDestroy (dom) < 0 &&
            virDomainIsActive (dom) == 1) {
                _corral_vm_set_libvirt_error (error, CORRAL_VM_ERROR_FAILED,
                                              "destroying the VM failed");
                return FALSE;
        }
        if (virDomainUndefineFlags (dom, VIR_DOMAIN_UNDEFINE_MANAGED_SAVE |
                                                 VIR_DOMAIN_UNDEFINE_SNAPSHOTS_METADATA) < 0) {
                _corral_vm_set_libvirt_error (error, CORRAL_VM_ERROR_FAILED,
                                              "undefining the VM failed");
                return FALSE;
        }
        if (self->sel->remote) {
                /* Its disk on that host; the uploaded image stays for the next VM. */
                g_autofree char *vol = _corral_remote_disk_volume_name (info->name);

                if (!_corral_remote_volume_delete (self->conn, vol, error))
                        return FALSE;
        }
        if (info->vm_dir) {
                /* QEMU leaves the shared-folder memory file behind (16 MiB of RAM in /dev/shm). */
                g_autofree char *shm_name = corral_fs_shm_name (info->vm_dir);
                g_autofree char *shm = g_build_filename ("/dev/shm", shm_name, NULL);
                g_autoptr (CorralPolicy) policy = corral_policy_load_default (NULL);
                g_autofree char *archive = corral_policy_audit_archive_dir (info->vm_dir);

                unlink (shm);
                /* The organisation's audit.keepDays: the audit logs outlive the VM. */
                if (!corral_policy_audit_keep (policy, info->vm_dir, info->name, error))
                        return FALSE;
                corral_policy_audit_prune (policy, archive, NULL);
        }
        return remove_dir (info->vm_dir, error);
}

static gboolean
do_op (CorralVmManager *self, virDomainPtr dom, const char *name, CorralVmOp op, GError **error)
{
        int r;
        const char *what;

        switch (op) {
        case CORRAL_VM_OP_START:
                if (virDomainIsActive (dom) == 1) {
                        g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_INVALID_STATE,
                                     "VM “%s” is already running", name);
                        return FALSE;
                }
                return start_domain (self, dom, "starting the VM failed", error);
        case CORRAL_VM_OP_PAUSE:
                if (!need_state (dom, name, CORRAL_VM_STATE_RUNNING, "pause", error))
                        return FALSE;
                r = virDomainSuspend (dom), what = "pausing the VM failed";
                break;
        case CORRAL_VM_OP_RESUME:
                if (!need_state (dom, name, CORRAL_VM_STATE_PAUSED, "resume", error))
                        return FALSE;
                r = virDomainResume (dom), what = "resuming the VM failed";
                break;
        case CORRAL_VM_OP_SAVE:
                if (virDomainIsActive (dom) != 1)
                        return need_state (dom, name, CORRAL_VM_STATE_RUNNING, "save", error);
                r = virDomainManagedSave (dom, 0), what = "saving the VM failed";
                break;
        case CORRAL_VM_OP_RESTORE:
                if (!need_state (dom, name, CORRAL_VM_STATE_SAVED, "restore", error))
                        return FALSE;
                return start_domain (self, dom, "restoring the VM failed", error);
        case CORRAL_VM_OP_DESTROY:
                if (virDomainIsActive (dom) != 1)
                        return TRUE;
                r = virDomainDestroy (dom), what = "destroying the VM failed";
                /* It may have stopped by itself meanwhile. */
                if (r < 0 && virDomainIsActive (dom) == 0)
                        r = 0;
                break;
        case CORRAL_VM_OP_REMOVE:
                return do_remove (self, dom, error);
        default:
                g_return_val_if_reached (FALSE);
        }
        if (r < 0)
                _corral_vm_set_libvirt_error (error, CORRAL_VM_ERROR_FAILED, what);
        return r >= 0;
}

static void
op_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
        OpData *d = data;
        GError *error = NULL;
        g_autoptr (virDomain) dom = find_domain (source, d->name, &error);

        if (dom && do_op (source, dom, d->name, d->op, &error))
                g_task_return_boolean (task, TRUE);
        else
                g_task_return_error (task, error);
}

void
corral_vm_manager_op_async (CorralVmManager *self,
                            const char *name,
                            CorralVmOp op,
                            GCancellable *cancellable,
                            GAsyncReadyCallback callback,
                            gpointer user_data)
{
        OpData *d = g_new0 (OpData, 1);
        g_autoptr (GTask) task = NULL;

        g_return_if_fail (CORRAL_IS_VM_MANAGER (self) && name);
        d->name = g_strdup (name);
        d->op = op;
        task = op_task (self, d, cancellable, callback, user_data);
        g_task_run_in_thread (task, op_thread);
}

gboolean
corral_vm_manager_op_finish (CorralVmManager *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
        return g_task_propagate_boolean (G_TASK (result), error);
}

/* Stop ---------------------------------------------------------------------------------------- */

static void
stop_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
        OpData *d = data;
        GError *error = NULL;
        g_autoptr (virDomain) dom = find_domain (source, d->name, &error);
        gint64 start = g_get_monotonic_time ();
        gint64 deadline = start + (gint64) d->timeout_ms * 1000;

        if (!dom) {
                g_task_return_error (task, error);
                return;
        }
        if (virDomainIsActive (dom) != 1) {
                g_task_return_boolean (task, TRUE);
                return;
        }
        if (!d->agent_poweroff)
                virDomainShutdown (dom);
        while (virDomainIsActive (dom) == 1 && g_get_monotonic_time () < deadline &&
               !g_cancellable_is_cancelled (cancellable)) {
                /* An agent that refused (an image from before system.poweroff) or died: ask
                 * through ACPI too, before the forced stop at the deadline. */
                if (d->agent_poweroff &&
                    g_get_monotonic_time () > start + AGENT_POWEROFF_GRACE_MS * 1000) {
                        virDomainShutdown (dom);
                        d->agent_poweroff = FALSE;
                }
                g_usleep (100 * 1000);
        }
        if (virDomainIsActive (dom) == 1 && virDomainDestroy (dom) < 0 &&
            virDomainIsActive (dom) == 1) {
                _corral_vm_set_libvirt_error (&error, CORRAL_VM_ERROR_FAILED,
                                              "powering off the VM failed");
                g_task_return_error (task, error);
                return;
        }
        g_task_return_boolean (task, TRUE);
}

void
corral_vm_manager_stop_async (CorralVmManager *self,
                              const char *name,
                              CorralAgentClient *client,
                              guint timeout_ms,
                              GCancellable *cancellable,
                              GAsyncReadyCallback callback,
                              gpointer user_data)
{
        OpData *d = g_new0 (OpData, 1);
        g_autoptr (GTask) task = NULL;

        g_return_if_fail (CORRAL_IS_VM_MANAGER (self) && name);
        d->name = g_strdup (name);
        d->timeout_ms = timeout_ms;
        if (client && corral_agent_client_get_connected (client)) {
                /* The reply may never come (the connection goes down with the VM). */
                corral_agent_client_poweroff_async (client, NULL, NULL, NULL);
                d->agent_poweroff = TRUE;
        }
        task = op_task (self, d, cancellable, callback, user_data);
        g_task_run_in_thread (task, stop_thread);
}

gboolean
corral_vm_manager_stop_finish (CorralVmManager *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
        return g_task_propagate_boolean (G_TASK (result), error);
}

gboolean
_corral_vm_manager_refuse_remote (CorralVmManager *self, const char *what, GError **error)
{
        if (!self->sel->remote)
                return FALSE;
        g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                     "%s needs the VM on this machine; over a remote libvirt connection (%s) it "
                     "is not available (save and restore are)",
                     what, self->sel->uri);
        return TRUE;
}

/* Connecting to the agent --------------------------------------------------------------------- */

typedef struct {
        CorralAgentClient *client;
        CorralVmInfo *info;
        GCancellable *attempt;
        gulong cancel_id;
        guint timeout_id;
        guint retry_id;
        gboolean timed_out;
        guint timeout_ms;
} ConnectData;

static void
connect_data_free (ConnectData *cd)
{
        g_clear_handle_id (&cd->timeout_id, g_source_remove);
        g_clear_handle_id (&cd->retry_id, g_source_remove);
        g_clear_object (&cd->client);
        g_clear_object (&cd->attempt);
        corral_vm_info_free (cd->info);
        g_free (cd);
}

static void connect_attempt (GTask *task);

static void
connect_finish_error (GTask *task, GError *error)
{
        ConnectData *cd = g_task_get_task_data (task);

        g_clear_handle_id (&cd->timeout_id, g_source_remove);
        if (cd->cancel_id)
                g_cancellable_disconnect (g_task_get_cancellable (task), cd->cancel_id);
        cd->cancel_id = 0;
        if (cd->timed_out) {
                g_autofree char *tail = corral_vm_info_read_console_tail (cd->info, CONSOLE_TAIL);
                g_clear_error (&error);
                error = g_error_new (CORRAL_VM_ERROR, CORRAL_VM_ERROR_TIMEOUT,
                                     "the agent of VM “%s” did not answer within %u s; "
                                     "console log %s ends with:\n%s",
                                     cd->info->name, cd->timeout_ms / 1000,
                                     cd->info->console_log ? cd->info->console_log : "(none)",
                                     tail ? tail : "(nothing)");
        }
        g_task_return_error (task, error);
        g_object_unref (task);
}

static gboolean
connect_retry_cb (gpointer user_data)
{
        GTask *task = user_data;
        ConnectData *cd = g_task_get_task_data (task);

        cd->retry_id = 0;
        connect_attempt (task);
        return G_SOURCE_REMOVE;
}

static void
connect_retry (GTask *task, GError *error)
{
        ConnectData *cd = g_task_get_task_data (task);

        if (g_cancellable_is_cancelled (cd->attempt)) {
                connect_finish_error (task,
                                      error ? error
                                            : g_error_new_literal (G_IO_ERROR, G_IO_ERROR_CANCELLED,
                                                                   "cancelled"));
                return;
        }
        if (error)
                g_debug ("agent connect attempt failed: %s", error->message);
        g_clear_error (&error);
        cd->retry_id = g_timeout_add (CONNECT_RETRY_MS, connect_retry_cb, task);
}

static void
connect_fd_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
        GTask *task = user_data;
        ConnectData *cd = g_task_get_task_data (task);
        GError *error = NULL;

        if (!corral_agent_client_connect_fd_finish (CORRAL_AGENT_CLIENT (source), result, &error)) {
                connect_retry (task, error);
                return;
        }
        g_clear_handle_id (&cd->timeout_id, g_source_remove);
        if (cd->cancel_id)
                g_cancellable_disconnect (g_task_get_cancellable (task), cd->cancel_id);
        cd->cancel_id = 0;
        g_task_return_boolean (task, TRUE);
        g_object_unref (task);
}

/* The agent of a VM with a vsock device: its guest CID is in the live XML. Returns -1 with
 * error set; G_IO_ERROR errors are worth a retry (the guest may still be booting). */
static int
open_vsock (CorralVmManager *self, const CorralVmInfo *info, GError **error)
{
        virDomainPtr dom = virDomainLookupByName (self->conn, info->domain_name);
        g_autofree char *xml = NULL;
        guint32 cid;

        if (!dom) {
                g_set_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_NO_SUCH_VM,
                             "VM “%s” is gone: %s", info->name, virGetLastErrorMessage ());
                return -1;
        }
        xml = virDomainGetXMLDesc (dom, 0);
        virDomainFree (dom);
        if (!xml || !corral_vsock_cid_from_domain_xml (xml, &cid)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                             "VM “%s” has no vsock CID yet", info->name);
                return -1;
        }
        return corral_vsock_connect (cid, CORRAL_VSOCK_AGENT_PORT, error);
}

static void
connect_attempt (GTask *task)
{
        CorralVmManager *self = g_task_get_source_object (task);
        ConnectData *cd = g_task_get_task_data (task);
        int fd;

        if (g_strcmp0 (cd->info->transport, "vsock") == 0) {
                GError *error = NULL;

                fd = open_vsock (self, cd->info, &error);
                if (fd < 0) {
                        if (error->domain == G_IO_ERROR)
                                connect_retry (task, error);
                        else
                                connect_finish_error (task, error);
                        return;
                }
                corral_agent_client_connect_fd_async (cd->client, fd, cd->attempt, connect_fd_done,
                                                      task);
                return;
        }
        fd = corral_unix_connect_full (cd->info->agent_socket, 1);
        if (fd == -ENAMETOOLONG) {
                connect_finish_error (task, g_error_new (CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                                                         "socket path too long: %s",
                                                         cd->info->agent_socket));
                return;
        }
        if (fd < 0) {
                /* QEMU has not created the socket yet, or is being restarted (restore). */
                connect_retry (task, g_error_new (G_IO_ERROR, g_io_error_from_errno (-fd),
                                                  "connect: %s", g_strerror (-fd)));
                return;
        }
        corral_agent_client_connect_fd_async (cd->client, fd, cd->attempt, connect_fd_done, task);
}

static gboolean
connect_timeout_cb (gpointer user_data)
{
        ConnectData *cd = user_data;

        cd->timeout_id = 0;
        cd->timed_out = TRUE;
        g_cancellable_cancel (cd->attempt);
        return G_SOURCE_REMOVE;
}

static void
outer_cancelled (GCancellable *cancellable, gpointer user_data)
{
        g_cancellable_cancel (G_CANCELLABLE (user_data));
}

static void
connect_start (GTask *task)
{
        ConnectData *cd = g_task_get_task_data (task);

        if (g_task_get_cancellable (task))
                cd->cancel_id =
                        g_cancellable_connect (g_task_get_cancellable (task),
                                               G_CALLBACK (outer_cancelled), cd->attempt, NULL);
        cd->timeout_id = g_timeout_add (cd->timeout_ms, connect_timeout_cb, cd);
        connect_attempt (task);
}

static void
bridge_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
        CorralVmManager *self = source;
        const CorralVmInfo *info = data;
        GError *error = NULL;

        if (_corral_remote_bridge_ensure (self->sel->uri, info->domain_name, info->vm_dir, &error))
                g_task_return_boolean (task, TRUE);
        else
                g_task_return_error (task, error);
}

static void
connect_bridge_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
        GTask *task = user_data;
        GError *error = NULL;

        if (!g_task_propagate_boolean (G_TASK (result), &error))
                connect_finish_error (task, error);
        else
                connect_start (task);
}

static void
connect_lookup_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
        GTask *task = user_data;
        ConnectData *cd = g_task_get_task_data (task);
        GError *error = NULL;

        cd->info = corral_vm_manager_lookup_finish (CORRAL_VM_MANAGER (source), result, &error);
        if (!cd->info) {
                connect_finish_error (task, error);
                return;
        }
        if (cd->info->state != CORRAL_VM_STATE_RUNNING) {
                connect_finish_error (task,
                                      g_error_new (CORRAL_VM_ERROR, CORRAL_VM_ERROR_INVALID_STATE,
                                                   "VM “%s” is %s, not running", cd->info->name,
                                                   corral_vm_state_to_string (cd->info->state)));
                return;
        }
        if (g_strcmp0 (cd->info->transport, "vsock") != 0 &&
            (!cd->info->agent_socket ||
             (CORRAL_VM_MANAGER (source)->sel->remote && !cd->info->vm_dir))) {
                connect_finish_error (task,
                                      g_error_new (CORRAL_VM_ERROR, CORRAL_VM_ERROR_FAILED,
                                                   "VM “%s” has no agent socket", cd->info->name));
                return;
        }
        if (CORRAL_VM_MANAGER (source)->sel->remote) {
                /* The sockets here are corral-chanbridge's; it may need starting (re-attach). */
                g_autoptr (GTask) bridge = g_task_new (source, NULL, connect_bridge_done, task);

                g_task_set_task_data (bridge, cd->info, NULL);
                g_task_run_in_thread (bridge, bridge_thread);
                return;
        }
        connect_start (task);
}

void
corral_vm_manager_connect_agent_async (CorralVmManager *self,
                                       const char *name,
                                       CorralAgentClient *client,
                                       guint timeout_ms,
                                       GCancellable *cancellable,
                                       GAsyncReadyCallback callback,
                                       gpointer user_data)
{
        GTask *task;
        ConnectData *cd = g_new0 (ConnectData, 1);

        g_return_if_fail (CORRAL_IS_VM_MANAGER (self) && name && CORRAL_IS_AGENT_CLIENT (client));
        cd->client = g_object_ref (client);
        cd->attempt = g_cancellable_new ();
        cd->timeout_ms = timeout_ms;
        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_task_data (task, cd, (GDestroyNotify) connect_data_free);
        /* The task holds itself until it completes; its callbacks run on this context. */
        corral_vm_manager_lookup_async (self, name, cancellable, connect_lookup_done, task);
}

gboolean
corral_vm_manager_connect_agent_finish (CorralVmManager *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
        return g_task_propagate_boolean (G_TASK (result), error);
}
