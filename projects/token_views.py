"""``/accounts/tokens/``: create or revoke your own API token; researchers see every token
(owner, created, the key's first characters) and may revoke any. A new key is shown once,
right after it is made."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods
from rest_framework.authtoken.models import Token

from projects import permissions
from projects.forms import TokenForm
from projects.http import bad_request
from projects.services.tokens import token_create, token_revoke


@login_required
@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    researcher = permissions.is_researcher(request.user)
    if request.method == "POST":
        form = TokenForm.parse(request.POST)
        if not form.is_valid():
            return bad_request(form.error_text())
        action = form.cleaned_data["action"]
        if action == "create":
            token = token_create(user=request.user)
            request.session["new_token"] = token.key
            messages.success(request, "New token created; copy it now, it is shown only once.")
        elif action == "revoke":
            owner = request.user
            if form.cleaned_data["user"] is not None:
                owner = get_object_or_404(get_user_model(), pk=form.cleaned_data["user"])
            existed = token_revoke(owner=owner, by=request.user)  # PermissionDenied -> 403
            messages.success(
                request, f"Revoked {owner.username}'s token." if existed else "There was no token to revoke."
            )
        else:
            return bad_request("unknown action")
        return redirect("tokens")
    me = int(request.user.pk or 0)
    mine = Token.objects.filter(user_id=me).first()
    others = Token.objects.select_related("user").exclude(user_id=me).order_by("user__username") if researcher else []
    return render(
        request,
        "registration/tokens.html",
        {"mine": mine, "new_key": request.session.pop("new_token", None), "others": others, "researcher": researcher},
    )
