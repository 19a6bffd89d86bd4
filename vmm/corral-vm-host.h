/* corral-vm-host.h — choosing the libvirt URI, the accelerator and the agent transport.
 *
 * The decision is a pure function of a struct of facts, so tests inject facts instead of
 * needing /dev/kvm or /dev/vhost-vsock; corral_host_facts_probe() gathers the real ones.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-domain-xml.h"

G_BEGIN_DECLS

typedef struct {
        gboolean is_root;
        const char *env_uri; /* $CORRAL_LIBVIRT_URI, nullable */
        const char *env_accel; /* $CORRAL_ACCEL, nullable */
        const char *state_dir; /* ${XDG_STATE_HOME:-$HOME/.local/state}/corral */
        gboolean kvm_rw; /* /dev/kvm opens read-write */
        gboolean kvm_pvm; /* /sys/module/kvm_pvm exists: KVM guests hang there */
        gboolean vhost_vsock_rw; /* /dev/vhost-vsock opens read-write */
        /* The system libvirt daemon answers on its socket (probed for root only). */
        gboolean system_libvirtd;
} CorralHostFacts;

typedef struct {
        char *uri;
        char *embed_root; /* nullable: set for qemu:///embed, needs corral_host_prepare() */
        char *state_dir;
        CorralAccel accel;
        gboolean accel_forced; /* $CORRAL_ACCEL said so */
        CorralTransport transport;
        /* The URI reaches another machine (corral_host_uri_is_remote()): images go to a storage
         * pool there, the channels through corral-chanbridge, and the transport is always
         * virtio-serial (vsock would need this machine's /dev/vhost-vsock to reach that one). */
        gboolean remote;
        /* qemu:///system used by root: Corral's files are root's (a 0700 home), so its VMs run
         * QEMU as root, as the embedded driver does, instead of as libvirt's QEMU user. */
        gboolean qemu_as_root;
} CorralHostSelection;

void corral_host_selection_free (CorralHostSelection *sel);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralHostSelection, corral_host_selection_free)

/* Fills facts from this machine and the environment; strings point into static or
 * environment storage except state_dir, which is (transfer full) in *ret_state_dir. */
void corral_host_facts_probe (CorralHostFacts *facts, char **ret_state_dir);

/* Returns: (transfer full); fails with G_IO_ERROR_INVALID_ARGUMENT on a bad $CORRAL_ACCEL. */
CorralHostSelection *corral_host_select (const CorralHostFacts *facts, GError **error);

/* Probe + select with this machine's facts. */
CorralHostSelection *corral_host_select_default (GError **error);

/* The system libvirt daemon's sockets (libvirtd, or the modular virtqemud). */
#define CORRAL_SYSTEM_LIBVIRTD_SOCKET "/run/libvirt/libvirt-sock"
#define CORRAL_SYSTEM_VIRTQEMUD_SOCKET "/run/libvirt/virtqemud-sock"

/* Creates the state dir and, for the embedded driver, <root>/etc/qemu.conf. */
gboolean corral_host_prepare (const CorralHostSelection *sel, GError **error);

/* Whether a libvirt URI reaches another machine (a host part, or a transport such as +ssh),
 * so the VM's sockets are not on this one. Unparsable URIs count as remote. */
gboolean corral_host_uri_is_remote (const char *uri);

/* The qemu.conf the embedded driver needs as root (no virtlogd, no DAC relabelling). */
#define CORRAL_EMBED_QEMU_CONF                                                                     \
        "# Written by Corral for the embedded libvirt QEMU driver.\n"                              \
        "stdio_handler = \"file\"\n"                                                               \
        "security_driver = \"none\"\n"                                                             \
        "user = \"root\"\n"                                                                        \
        "group = \"root\"\n"

G_END_DECLS
