/* corral-vm-manager.h — Corral VMs as libvirt domains: create, start, stop, pause, save,
 * restore, destroy, remove, list, and the way back to each VM's agent.
 *
 * Domains are persistent (virDomainDefineXML), named "corral-" + the VM name, and carry a
 * <metadata> element (corral-domain-xml.h) so a new process finds their agent sockets again
 * (re-attach). Per-VM files (agent socket, console log) live in <state dir>/vms/<name>/.
 *
 * libvirt calls block, so every operation runs in a GTask thread; callbacks run on the
 * thread-default main context of the caller. One manager holds one libvirt connection.
 *
 * The embedded driver logs its warnings on stderr; programs that do not want them call
 * corral_vm_manager_quiet_libvirt_logs() first thing in main(), before any thread exists.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-agent-client.h"
#include "corral-domain-xml.h"
#include "corral-vm-host.h"

#include <gio/gio.h>

G_BEGIN_DECLS

#define CORRAL_VM_ERROR (corral_vm_error_quark ())

typedef enum {
        CORRAL_VM_ERROR_UNREACHABLE, /* libvirt could not be reached */
        CORRAL_VM_ERROR_NO_SUCH_VM,
        CORRAL_VM_ERROR_EXISTS,
        CORRAL_VM_ERROR_INVALID_STATE, /* e.g. pause of a VM that is not running */
        CORRAL_VM_ERROR_TIMEOUT,
        CORRAL_VM_ERROR_FAILED, /* libvirt refused; the message says why */
} CorralVmError;

GQuark corral_vm_error_quark (void);

typedef enum {
        CORRAL_VM_STATE_SHUTOFF,
        CORRAL_VM_STATE_RUNNING,
        CORRAL_VM_STATE_PAUSED,
        CORRAL_VM_STATE_SAVED, /* shut off with a managed save image: restore resumes it */
        CORRAL_VM_STATE_OTHER,
        CORRAL_VM_STATE_CRASHED, /* libvirt says crashed (guest panic with on_crash destroy) */
} CorralVmState;

const char *corral_vm_state_to_string (CorralVmState state);

typedef struct {
        char *name; /* without the "corral-" prefix */
        char *domain_name;
        CorralVmState state;
        guint memory_mib;
        guint vcpus;
        char *transport; /* from the metadata; "?" when missing */
        char *accel;
        char *image_name;
        char *agent_socket; /* nullable */
        char *console_log; /* nullable */
        char *vm_dir; /* nullable */
        /* nullable: a warm-pool VM handed out answers to this name (corral-vm-pool.h); it is
         * the name its user knows it by */
        char *alias;
} CorralVmInfo;

void corral_vm_info_free (CorralVmInfo *info);
/* The name its user knows it by: a handed-out pool VM's alias, else its name. */
const char *corral_vm_info_get_user_name (const CorralVmInfo *info);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralVmInfo, corral_vm_info_free)

/* What to create; strings are copied. */
typedef struct {
        const char *name; /* [A-Za-z0-9_.-], at most 57 characters (64 with the prefix) */
        guint memory_mib; /* 0: 512 */
        guint vcpus; /* 0: 2 */
        const char *kernel;
        const char *initrd;
        const char *cmdline; /* nullable: "console=ttyS0 quiet panic=-1" */
        const char *image_name;
        const char *manifest_sha256; /* nullable */
        const char *disk; /* nullable */
        /* A screen for computer use (CorralDomainConfig.vnc_socket): VNC on vnc.sock in the
         * VM's folder; its size (0: 1280x800) and whether it has a clipboard channel. */
        gboolean vnc;
        guint display_width;
        guint display_height;
        gboolean clipboard;
        /* nullable: how a slow step goes (uploading the image to a remote libvirt host, once
         * per image), called from a worker thread with a fraction and a line of text. */
        void (*progress) (double fraction, const char *text, gpointer data);
        gpointer progress_data;
} CorralVmSpec;

void corral_vm_manager_quiet_libvirt_logs (void);

/* TRUE once this process opened libvirt's embedded driver (qemu:///embed: root without a
 * libvirtd). That driver reconnects to the running VMs on threads of its own, which no API
 * waits for; a short-lived program that exits while one runs crashes in the C library's
 * destructors (libnuma's, under virNumaGetHostMemoryNodeset). Such a program ends with _exit()
 * after flushing its output instead (corralctl does). */
gboolean corral_vm_manager_embedded_opened (void);

#define CORRAL_TYPE_VM_MANAGER (corral_vm_manager_get_type ())
G_DECLARE_FINAL_TYPE (CorralVmManager, corral_vm_manager, CORRAL, VM_MANAGER, GObject)

/* sel: (nullable) (transfer none): NULL picks corral_host_select_default(). Prepares the state
 * dir (and qemu.conf for the embedded driver) and opens the connection. */
void corral_vm_manager_open_async (const CorralHostSelection *sel,
                                   GCancellable *cancellable,
                                   GAsyncReadyCallback callback,
                                   gpointer user_data);
CorralVmManager *corral_vm_manager_open_finish (GAsyncResult *result, GError **error);

const CorralHostSelection *corral_vm_manager_get_selection (CorralVmManager *self);

/* Defines and starts. Result: (transfer full) CorralVmInfo. */
void corral_vm_manager_create_async (CorralVmManager *self,
                                     const CorralVmSpec *spec,
                                     GCancellable *cancellable,
                                     GAsyncReadyCallback callback,
                                     gpointer user_data);
CorralVmInfo *
corral_vm_manager_create_finish (CorralVmManager *self, GAsyncResult *result, GError **error);

/* Result: (transfer full) CorralVmInfo; CORRAL_VM_ERROR_NO_SUCH_VM when unknown. */
void corral_vm_manager_lookup_async (CorralVmManager *self,
                                     const char *name,
                                     GCancellable *cancellable,
                                     GAsyncReadyCallback callback,
                                     gpointer user_data);
CorralVmInfo *
corral_vm_manager_lookup_finish (CorralVmManager *self, GAsyncResult *result, GError **error);

/* Result: (transfer full) (element-type CorralVmInfo) every "corral-" domain, sorted by name. */
void corral_vm_manager_list_async (CorralVmManager *self,
                                   GCancellable *cancellable,
                                   GAsyncReadyCallback callback,
                                   gpointer user_data);
GPtrArray *
corral_vm_manager_list_finish (CorralVmManager *self, GAsyncResult *result, GError **error);

typedef enum {
        CORRAL_VM_OP_START, /* boots, or resumes a managed save image */
        CORRAL_VM_OP_PAUSE,
        CORRAL_VM_OP_RESUME,
        CORRAL_VM_OP_SAVE, /* managed save: memory to disk, QEMU exits */
        CORRAL_VM_OP_RESTORE, /* start from the managed save image; fails without one */
        CORRAL_VM_OP_DESTROY, /* forced power off */
        CORRAL_VM_OP_REMOVE, /* destroy if running, undefine, delete the VM folder */
} CorralVmOp;

/* One lifecycle operation on the VM called name. */
void corral_vm_manager_op_async (CorralVmManager *self,
                                 const char *name,
                                 CorralVmOp op,
                                 GCancellable *cancellable,
                                 GAsyncReadyCallback callback,
                                 gpointer user_data);
gboolean corral_vm_manager_op_finish (CorralVmManager *self, GAsyncResult *result, GError **error);

/* Graceful power off: `poweroff` through client when it is connected (the minimal guest has
 * no ACPI daemon), else virDomainShutdown(); virDomainDestroy() after timeout_ms. */
void corral_vm_manager_stop_async (CorralVmManager *self,
                                   const char *name,
                                   CorralAgentClient *client,
                                   guint timeout_ms,
                                   GCancellable *cancellable,
                                   GAsyncReadyCallback callback,
                                   gpointer user_data);
gboolean
corral_vm_manager_stop_finish (CorralVmManager *self, GAsyncResult *result, GError **error);

/* Connects client (not connected; reused across reconnects) to the VM's agent, retrying until
 * the agent's HELLO arrives or timeout_ms passes (CORRAL_VM_ERROR_TIMEOUT, with the console
 * tail in the message). Runs on the caller's main context, like the client. */
void corral_vm_manager_connect_agent_async (CorralVmManager *self,
                                            const char *name,
                                            CorralAgentClient *client,
                                            guint timeout_ms,
                                            GCancellable *cancellable,
                                            GAsyncReadyCallback callback,
                                            gpointer user_data);
gboolean corral_vm_manager_connect_agent_finish (CorralVmManager *self,
                                                 GAsyncResult *result,
                                                 GError **error);

/* Returns: (transfer full) (nullable) the last max_bytes of the VM's console log. */
char *corral_vm_info_read_console_tail (const CorralVmInfo *info, gsize max_bytes);

G_END_DECLS
