/* vnc-test-server.h — a real VNC server (LibVNCServer) in a test, over a socketpair: a grey
 * screen with a blue square at (960, 600)-(1060, 700) on 1920x1200, no cursor drawn into the
 * picture (like QEMU's), every key and pointer event recorded, and a late repaint on a left
 * click when asked (a slow guest). One server at a time.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>

#include "corral-vnc.h"

#define VNC_TEST_SCREEN_W 1920
#define VNC_TEST_SCREEN_H 1200

typedef struct {
        guint8 type; /* 'k' key, 'p' pointer */
        guint32 keysym;
        guint32 scancode; /* with QEMU's extended key events; 0 for a plain key event */
        gboolean down;
        int x, y, buttons;
} VncTestEvent;

/* Whether the next server started offers QEMU's extended key events, as QEMU's does (reset to
 * FALSE when it stops). */
void vnc_test_server_offer_extended_keys (gboolean offer);
/* The next server started shows a black screen for ms (G_MAXUINT: for good) before its picture,
 * as QEMU's first answer to a client is when no one was watching (reset when it stops). */
void vnc_test_server_black_for (guint ms);

/* Starts the server; returns the client's end of the socket. */
int vnc_test_server_start (void);
/* Starts the server and connects Corral's client to it (to path when not NULL: the server
 * listens there), once its first picture came and the screen has been quiet for 300 ms, as
 * each test starts from one. (transfer full) */
CorralVnc *vnc_test_server_connect (const char *path);

/* The same, listening on a unix socket at path: each connection is a client (as QEMU's). */
void vnc_test_server_listen (const char *path);
/* Closes every client's connection (as QEMU's when the VM is saved); the socket stays. */
void vnc_test_server_drop_clients (void);
void vnc_test_server_stop (void);
/* The events recorded so far (transfer full), and a fresh record. */
GArray *vnc_test_server_take_events (void);
guint vnc_test_server_n_events (void);
/* Each release of the left button repaints the whole screen in rgb, delay_ms later. */
void vnc_test_server_repaint_on_click (guint delay_ms, guint32 rgb);
