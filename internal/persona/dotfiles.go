package persona

import (
	"fmt"
	"strings"
)

// The generated dotfiles are what a developer's distribution put in their
// home, plus the few lines people add over months. Every line must work
// on a base image that lacks the tools it mentions: nothing may print an
// error when a shell starts.

const bashrc = `# ~/.bashrc: read by every interactive bash that is not a login shell,
# and by ~/.profile for login shells.

# Scripts and non-interactive shells stop here.
case $- in
    *i*) ;;
      *) return;;
esac

# Keep a long history, without duplicates or lines starting with a space,
# and append to it instead of overwriting it when several shells exit.
HISTCONTROL=ignoreboth
HISTSIZE=5000
HISTFILESIZE=10000
shopt -s histappend

# Re-read LINES and COLUMNS after each command.
shopt -s checkwinsize

# Let less look into archives and other non-text files.
[ -x /usr/bin/lesspipe ] && eval "$(SHELL=/bin/sh lesspipe)"

if [ -x /usr/bin/dircolors ]; then
    if [ -r ~/.dircolors ]; then
        eval "$(dircolors -b ~/.dircolors)"
    else
        eval "$(dircolors -b)"
    fi
    alias ls='ls --color=auto'
    alias grep='grep --color=auto'
    alias diff='diff --color=auto'
fi

case "$TERM" in
    xterm-color|*-256color) color_prompt=yes;;
esac

if [ "$color_prompt" = yes ]; then
    PS1='\[\033[01;32m\]\u@\h\[\033[00m\]:\[\033[01;34m\]\w\[\033[00m\]\$ '
else
    PS1='\u@\h:\w\$ '
fi
unset color_prompt

# Show user@host: dir in the terminal's title.
case "$TERM" in
    xterm*|rxvt*) PS1="\[\e]0;\u@\h: \w\a\]$PS1";;
esac

alias ll='ls -alF'
alias la='ls -A'
alias l='ls -CF'

[ -f ~/.bash_aliases ] && . ~/.bash_aliases

if ! shopt -oq posix; then
    if [ -f /usr/share/bash-completion/bash_completion ]; then
        . /usr/share/bash-completion/bash_completion
    elif [ -f /etc/bash_completion ]; then
        . /etc/bash_completion
    fi
fi

# --- mine ---
export EDITOR={{editor}}
export VISUAL={{editor}}

alias gs='git status'
alias gd='git diff'
alias gl='git log --oneline --graph --decorate -20'
alias ..='cd ..'
alias ...='cd ../..'

# Prompt with the git branch, when git's prompt helper is around.
if [ -f /usr/lib/git-core/git-sh-prompt ]; then
    . /usr/lib/git-core/git-sh-prompt
    GIT_PS1_SHOWDIRTYSTATE=1
    PS1='\[\033[01;32m\]\u@\h\[\033[00m\]:\[\033[01;34m\]\w\[\033[33m\]$(__git_ps1 " (%s)")\[\033[00m\]\$ '
fi
`

const profile = `# ~/.profile: read by login shells. bash reads ~/.bash_profile or
# ~/.bash_login instead when one of them exists.

# umask 022

if [ -n "$BASH_VERSION" ] && [ -f "$HOME/.bashrc" ]; then
    . "$HOME/.bashrc"
fi

# Private bin directories, when they exist.
if [ -d "$HOME/bin" ]; then
    PATH="$HOME/bin:$PATH"
fi
if [ -d "$HOME/.local/bin" ]; then
    PATH="$HOME/.local/bin:$PATH"
fi

# Go: the toolchain from go.dev and whatever go install puts in ~/go/bin.
for d in /usr/local/go/bin "$HOME/go/bin"; do
    case ":$PATH:" in
        *":$d:"*) ;;
        *) [ -d "$d" ] && PATH="$PATH:$d";;
    esac
done
unset d
`

const bashLogout = `# ~/.bash_logout: run when a login shell exits.

# Clear the console when leaving it, for privacy.
if [ "$SHLVL" = 1 ]; then
    [ -x /usr/bin/clear_console ] && /usr/bin/clear_console -q
fi
`

const gitignoreGlobal = `*.swp
*~
.idea/
.vscode/
`

func (p *Persona) bashrc(editor string) string {
	return strings.ReplaceAll(bashrc, "{{editor}}", editor)
}

func (p *Persona) gitconfig(editor string) string {
	return fmt.Sprintf(`[user]
	name = %s
	email = %s
[init]
	defaultBranch = main
[core]
	editor = %s
[pull]
	ff = only
[push]
	autoSetupRemote = true
[fetch]
	prune = true
[alias]
	st = status -sb
	co = checkout
	br = branch
	lg = log --oneline --graph --decorate
	amend = commit --amend --no-edit
[diff]
	colorMoved = zebra
[rerere]
	enabled = true
`, p.FullName, p.Email, editor)
}

// editor is the persona's editor command, vim unless EDITOR says otherwise.
func (p *Persona) editor() string {
	if e := strings.TrimSpace(p.EnvVars["EDITOR"]); e != "" {
		return e
	}
	return "vim"
}
