/* corral-domain-xml.h — libvirt domain XML for a Corral VM, from a structured config.
 *
 * Every text and attribute value goes through g_markup_escape_text(); on top of that, values
 * that have no business containing markup are validated and refused (never sanitised): names
 * are [A-Za-z0-9_.-]{1,64}, paths are absolute and free of control characters.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define CORRAL_DOMAIN_PREFIX "corral-"
#define CORRAL_AGENT_PORT_NAME "org.corral.agent.0"
/* Shared folders (proto/FS-PROTOCOL.md): always a virtio-serial port, whatever the agent uses. */
#define CORRAL_FS_PORT_NAME "org.corral.fs.0"
#define CORRAL_NET_PORT_NAME "org.corral.net.0"
#define CORRAL_METADATA_NS "https://corral.dev/xmlns/libvirt/vm/1"
#define CORRAL_METADATA_PREFIX "corral"
#define CORRAL_NAME_MAX 64
#define CORRAL_DISPLAY_DEFAULT_WIDTH 1280
#define CORRAL_DISPLAY_DEFAULT_HEIGHT 800
/* What a screen may be: QEMU's virtio GPU goes further, but a model's screenshot does not. */
#define CORRAL_DISPLAY_MIN_WIDTH 640
#define CORRAL_DISPLAY_MIN_HEIGHT 480
#define CORRAL_DISPLAY_MAX_WIDTH 3840
#define CORRAL_DISPLAY_MAX_HEIGHT 2160
/* The port QEMU's qemu-vdagent chardev answers on in the guest (spice-vdagent's). */
#define CORRAL_VDAGENT_PORT_NAME "com.redhat.spice.0"
/* sun_path is 108 bytes including the NUL. */
#define CORRAL_SOCKET_PATH_MAX 107

typedef enum {
        CORRAL_ACCEL_TCG,
        CORRAL_ACCEL_KVM,
} CorralAccel;

typedef enum {
        CORRAL_TRANSPORT_VIRTIO_SERIAL,
        CORRAL_TRANSPORT_VSOCK,
} CorralTransport;

typedef struct {
        const char *name; /* domain name, e.g. "corral-work" */
        const char *uuid; /* canonical 36-character form */
        guint memory_mib;
        guint vcpus;
        CorralAccel accel;
        const char *kernel;
        const char *initrd;
        const char *cmdline;
        const char *disk; /* nullable: qcow2 overlay, virtio-blk */
        CorralTransport transport;
        const char *agent_socket; /* virtio-serial only: the channel's unix socket */
        const char *fs_socket; /* nullable: the shared-folder port's unix socket */
        const char *net_socket; /* nullable: the network port's unix socket (corral-egressd) */
        const char *fs_shm_name; /* nullable: ivshmem for file contents (/dev/shm/NAME) */
        guint fs_shm_mib;
        const char *console_log;
        /* nullable: the VM's screen, for computer use: VNC on this unix socket (0600 in the
         * VM's 0700 folder, so only Corral connects), a virtio GPU of a fixed resolution, a USB
         * tablet (absolute pointer), no audio. Input and screenshots then come from the host
         * side, where the guest can neither fake nor observe them. */
        const char *vnc_socket;
        /* The screen's size; 0: CORRAL_DISPLAY_DEFAULT_WIDTH x _HEIGHT. */
        guint display_width;
        guint display_height;
        /* With vnc_socket: a clipboard channel (QEMU's qemu-vdagent, the guest's spice-vdagent
         * speaking to it) that VNC clients can read and set. The pointer never goes through it
         * (mouse mode "server": the tablet's events come from QEMU, not from guest software). */
        gboolean clipboard;
        /* metadata, read back on re-attach */
        const char *image_name;
        const char *manifest_sha256; /* nullable */
        const char *vm_dir;
        /* The libvirt host is another machine: the channels get paths libvirt picks there and
         * are reached through virDomainOpenChannel() (corral-chanbridge), the serial console is
         * a pty read through virDomainOpenConsole() into console_log here, and kernel, initrd
         * and disk are paths on that host. No ivshmem and no VNC socket (they need the same
         * machine); the *_socket fields then name the bridge's local sockets and only say
         * which ports the VM has. */
        gboolean remote;
        /* QEMU runs as root, whatever the daemon's default user (root on qemu:///system, whose
         * files live in a home that libvirt's QEMU user cannot enter); nothing is relabelled. */
        gboolean qemu_as_root;
} CorralDomainConfig;

const char *corral_accel_to_string (CorralAccel accel);
gboolean corral_accel_from_string (const char *str, CorralAccel *ret_accel);
const char *corral_transport_to_string (CorralTransport transport);
gboolean corral_transport_from_string (const char *str, CorralTransport *ret_transport);

gboolean corral_domain_name_is_valid (const char *name);
/* Absolute, no control characters, no "/../" games are needed since nothing is resolved. */
gboolean corral_domain_path_is_valid (const char *path);

/* Returns: (transfer full) the domain XML, or NULL with G_IO_ERROR_INVALID_ARGUMENT. */
char *corral_domain_xml_build (const CorralDomainConfig *config, GError **error);

/* What corral_domain_xml_build() writes into <metadata>, parsed back from the element that
 * virDomainGetMetadata() returns. Fields are (transfer full), NULL when absent. */
typedef struct {
        char *image_name;
        char *manifest_sha256;
        char *transport;
        char *accel;
        char *agent_socket;
        char *console_log;
        char *vm_dir;
} CorralDomainMetadata;

void corral_domain_metadata_free (CorralDomainMetadata *meta);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralDomainMetadata, corral_domain_metadata_free)

CorralDomainMetadata *corral_domain_metadata_parse (const char *xml, GError **error);

G_END_DECLS
