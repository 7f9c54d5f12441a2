"""Users with a role, shared by the generation page tests."""

import pytest
from django.contrib.auth.models import Group, User

from projects import permissions


def user_with_role(username: str, role: str) -> User:
    user = User.objects.create_user(username, password="pw-123456")
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


@pytest.fixture
def researcher(db):
    return user_with_role("res", permissions.RESEARCHER)


@pytest.fixture
def annotator(db):
    return user_with_role("ann", permissions.ANNOTATOR)
