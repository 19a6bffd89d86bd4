/* corral-vnc.h — one VNC connection to a VM's screen (libvncclient), owned by one object that
 * the app's live view and the assistant's computer tool both use: it holds the connection, the
 * host's copy of the screen and the input that goes to it.
 *
 * The VNC server is QEMU's, but what it sends is the guest's doing (sizes, pixels, clipboard
 * text), so it is read like everything else from the VM: the screen's size is bounded before
 * anything is allocated, a server that stops in the middle of a message is dropped after a few
 * seconds, and a message libvncclient cannot make sense of ends the connection (the caller
 * reconnects) instead of being guessed at. Clipboard text from the guest is not taken.
 *
 * libvncclient blocks, so the connection runs on a thread of its own; every call here is made
 * from the thread that made the object (its main context), and the signals are emitted there.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/* The largest screen taken: a side, and the pixels in all (64 MiB of RGBA). */
#define CORRAL_VNC_MAX_SIDE 8192
#define CORRAL_VNC_MAX_PIXELS (16u * 1024 * 1024)
/* A connection's first picture, when all black, waits this long for the real one (QEMU's
 * longest refresh interval): see on_update_finished in corral-vnc.c. */
#define CORRAL_VNC_STALE_FIRST_MS 3000
/* A server that sends part of a message and then nothing is dropped after this long. */
#define CORRAL_VNC_READ_TIMEOUT_S 5

typedef enum {
        CORRAL_VNC_BUTTON_LEFT = 1 << 0,
        CORRAL_VNC_BUTTON_MIDDLE = 1 << 1,
        CORRAL_VNC_BUTTON_RIGHT = 1 << 2,
        CORRAL_VNC_BUTTON_WHEEL_UP = 1 << 3,
        CORRAL_VNC_BUTTON_WHEEL_DOWN = 1 << 4,
        CORRAL_VNC_BUTTON_WHEEL_LEFT = 1 << 5,
        CORRAL_VNC_BUTTON_WHEEL_RIGHT = 1 << 6,
} CorralVncButtons;

#define CORRAL_TYPE_VNC (corral_vnc_get_type ())
G_DECLARE_FINAL_TYPE (CorralVnc, corral_vnc, CORRAL, VNC, GObject)

/* Signals:
 *   "screen-changed" (guint x, guint y, guint width, guint height): part of the screen was
 *       redrawn (updates are coalesced: one emission per main-loop turn at most);
 *   "closed" (const char *reason): the connection ended (reason NULL when asked to).
 * Properties: "width", "height" (0 until connected), "connected". */

CorralVnc *corral_vnc_new (void);

/* Connects to the VNC server on the unix socket at path (a VM's vnc.sock). */
void corral_vnc_connect_async (CorralVnc *self,
                               const char *path,
                               GCancellable *cancellable,
                               GAsyncReadyCallback callback,
                               gpointer user_data);
/* The same on a connected socket (it takes fd, also on failure). */
void corral_vnc_connect_fd_async (CorralVnc *self,
                                  int fd,
                                  GCancellable *cancellable,
                                  GAsyncReadyCallback callback,
                                  gpointer user_data);
gboolean corral_vnc_connect_finish (CorralVnc *self, GAsyncResult *result, GError **error);

/* (nullable) the socket corral_vnc_connect_async() was last given: where to connect again after
 * the VM's QEMU changed (a managed save and restore). */
const char *corral_vnc_get_path (CorralVnc *self);

/* Ends the connection (no "closed" reason); the screen's last picture stays readable. */
void corral_vnc_close (CorralVnc *self);

gboolean corral_vnc_is_connected (CorralVnc *self);
guint corral_vnc_get_width (CorralVnc *self);
guint corral_vnc_get_height (CorralVnc *self);

/* The screen as it is now: rows of width * 4 bytes, R G B A, opaque. (transfer full) NULL
 * before the first connection. */
GBytes *corral_vnc_snapshot (CorralVnc *self, guint *width, guint *height);

/* How many updates the screen has had, and when the last came (g_get_monotonic_time()). */
guint64 corral_vnc_get_update_count (CorralVnc *self);
gint64 corral_vnc_get_last_update_time (CorralVnc *self);

/* Input, sent in order: the pointer at (x, y) of the screen (clamped to it) with buttons held
 * (CorralVncButtons; a wheel step is a press and a release), and a key: its X keysym and, when
 * known, the key's place on the keyboard as an XT scancode (E0-prefixed keys as 0x80 | code;
 * 0 for none). With a scancode, and a server that offers QEMU's extended key events, the guest
 * gets that very key and its own keyboard layout decides the character; otherwise the server
 * maps the keysym with its keymap (QEMU's: en-us), which does not press Shift for "@". */
void corral_vnc_pointer (CorralVnc *self, guint x, guint y, guint buttons);
void corral_vnc_key (CorralVnc *self, guint32 keysym, guint scancode, gboolean down);

/* The XT scancode of a Linux evdev key code (a GDK hardware keycode on Linux is evdev + 8), 0
 * for a key XT has no code for. */
guint corral_vnc_scancode_from_evdev (guint evdev);

G_END_DECLS
