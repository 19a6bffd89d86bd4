/* corralctl-computer.h — corralctl computer VM ACTION…: the computer tool's actions on a VM's
 * screen from the command line (a VM made with "corralctl vm create --screen").
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

int corralctl_computer_main (int argc, char **argv);
